//! Fresh stores for the conformance suite, one constructor per backend. Each store
//! lives in its own place (a temp file), so runs never collide.

use std::sync::Arc;

use holdfast::store::Store;
use holdfast::store::sqlite::SqliteStore;

/// A store and whatever keeps it alive.
pub struct Fresh {
    pub store: Arc<dyn Store>,
    pub sqlite: Option<SqliteStore>,
    _dir: tempfile::TempDir,
}

pub async fn sqlite() -> Fresh {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("store.db"))
        .await
        .expect("open store");
    Fresh {
        store: Arc::new(store.clone()),
        sqlite: Some(store),
        _dir: dir,
    }
}
