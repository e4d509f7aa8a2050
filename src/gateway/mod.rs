//! The MCP gateway (DESIGN §10.2): holds enforced at the tool-call boundary.
//! [`proxy`] speaks the protocol on both sides with the official SDK and passes
//! everything through; [`gate`] turns each `tools/call` into an operation
//! before it leaves, records its outcome, and refuses a call identical to a
//! held one; [`settings`] is the config's `[gateway]` table.

pub mod gate;
pub mod proxy;
pub mod settings;

pub use settings::{GATEWAY_IDENTITY, GatewaySettings};
