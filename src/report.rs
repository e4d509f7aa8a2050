//! The report as every surface computes it — the console's metrics tab, `holdfast
//! report` and the bench: the facts of the session's tenants (G7), assembled by
//! `core::metrics` at one `now`.

use chrono::{DateTime, Utc};

use crate::core::metrics::{self, Report};
use crate::store::{Session, StoreError};

/// The report over what `session` may see, at `now`.
pub async fn compute(session: &Session, now: DateTime<Utc>) -> Result<Report, StoreError> {
    let data = session.dataset().await?;
    Ok(metrics::report(&data, now))
}
