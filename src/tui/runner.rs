//! The effects runner and the two sources of messages besides it: a thread
//! reading terminal events, and a poller watching the store for changes. Store
//! I/O happens here, on tasks, off the render path; every answer goes back to the
//! loop as a [`Message`] tagged with the generation of its request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::app::{Effect, Message};
use super::queue::Listing;
use crate::core::clock::Clock;
use crate::store::Store;

/// How often the poller looks at the store's audit head.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// Runs one effect against `store` and returns the message answering it (`None`
/// for [`Effect::Quit`], which the loop handles itself).
pub async fn perform(store: &dyn Store, effect: &Effect) -> Option<Message> {
    match effect {
        Effect::List { generation, query } => {
            let counts = async {
                match &query.counts {
                    Some(filter) => store.counts(filter, query.now).await.map(Some),
                    None => Ok(None),
                }
            };
            let (listing, counts) = tokio::join!(
                store.list(&query.filter, query.sort, query.page, query.now),
                counts
            );
            let result = match (listing, counts) {
                (Ok((rows, total)), Ok(counts)) => Ok(Listing {
                    rows,
                    total,
                    counts,
                }),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, "listing failed");
                    Err(e.to_string())
                }
            };
            Some(Message::Listed {
                generation: *generation,
                result,
            })
        }
        Effect::Load { generation, id } => {
            let result = store.detail(id).await.map(Box::new).map_err(|e| {
                tracing::warn!(error = %e, %id, "loading an operation failed");
                e.to_string()
            });
            Some(Message::Loaded {
                generation: *generation,
                result,
            })
        }
        Effect::Debounce { generation, delay } => {
            tokio::time::sleep(*delay).await;
            Some(Message::Debounced {
                generation: *generation,
            })
        }
        Effect::Quit => None,
    }
}

/// Spawns effects on tasks whose answers come back on the message channel.
pub struct Runner {
    store: Arc<dyn Store>,
    tx: UnboundedSender<Message>,
}

impl Runner {
    pub fn new(store: Arc<dyn Store>, tx: UnboundedSender<Message>) -> Self {
        Runner { store, tx }
    }

    /// Starts `effect`; returns `false` for [`Effect::Quit`].
    pub fn run(&self, effect: Effect) -> bool {
        if effect == Effect::Quit {
            return false;
        }
        let store = Arc::clone(&self.store);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            if let Some(message) = perform(store.as_ref(), &effect).await {
                let _ = tx.send(message);
            }
        });
        true
    }
}

/// Looks at the store's audit head every [`POLL_EVERY`] and reports it with the
/// time now; ends when the console stops listening.
pub fn spawn_poller(
    store: Arc<dyn Store>,
    clock: Clock,
    tx: UnboundedSender<Message>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(POLL_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let head = store.head_seq().await.map_err(|e| e.to_string());
            if tx
                .send(Message::Poll {
                    head,
                    now: clock.now(),
                })
                .is_err()
            {
                break;
            }
        }
    })
}

/// The thread reading terminal events; stopped and joined when dropped.
pub struct Input {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Input {
    /// Starts reading keys, mouse events and resizes into `tx`.
    pub fn spawn(tx: UnboundedSender<Message>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("holdfast-input".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match event::poll(Duration::from_millis(100)) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot read the terminal");
                            break;
                        }
                    }
                    let message = match event::read() {
                        Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => Message::Key(key),
                        Ok(Event::Mouse(mouse)) => Message::Mouse(mouse),
                        Ok(Event::Resize(width, height)) => Message::Resize(width, height),
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot read the terminal");
                            break;
                        }
                    };
                    if tx.send(message).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Input {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
