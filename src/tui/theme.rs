//! Styles of the console, in one place so that `NO_COLOR` turns every colour off
//! while keeping bold, reverse and underline, which carry meaning without colour.

use ratatui::style::{Color, Modifier, Style};

use crate::core::model::{ItemState, Risk, State};

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub fn plain(self) -> Style {
        Style::new()
    }

    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn dim(self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub fn label(self) -> Style {
        self.fg(Color::Gray)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn focused_border(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Something the reviewer must notice: overdue, exhausted, changed, prohibited.
    pub fn alert(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn good(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn state(self, state: State) -> Style {
        match state {
            State::Unknown => self.fg(Color::Magenta).add_modifier(Modifier::BOLD),
            State::Partial => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            State::Blocked => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            State::Succeeded | State::Compensated => self.fg(Color::Green),
            State::Failed => self.fg(Color::Red),
            _ => self.plain(),
        }
    }

    pub fn risk(self, risk: Risk) -> Style {
        match risk {
            Risk::Critical => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Risk::High => self.fg(Color::Red),
            Risk::Medium => self.fg(Color::Yellow),
            Risk::Low => self.plain(),
        }
    }

    pub fn item(self, state: ItemState) -> Style {
        match state {
            ItemState::Succeeded | ItemState::Compensated => self.good(),
            ItemState::Failed => self.alert(),
            ItemState::Unknown => self.warn(),
            ItemState::Skipped | ItemState::NotAttempted => self.dim(),
        }
    }
}
