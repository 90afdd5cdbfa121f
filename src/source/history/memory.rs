//! A history kept in memory, as Helm's memory driver is for its action tests: the three tables
//! of [`schema`](super::schema) as vectors, written and pruned as the statements there write and
//! prune them, so the history engine's tests run without a file. Clones share the same tables
//! (a writer and a reader of one history).

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use super::backend::{ChangeRow, EpisodeRow, HistoryBackend, HistoryError, Tables};
use crate::report::history::{EpisodeEdge, FindingRecord, FindingWrite};

/// The three tables: findings (by id), changes, episodes.
#[derive(Default)]
struct Rows {
    findings: Vec<(String, FindingRecord)>,
    changes: Vec<ChangeRow>,
    episodes: Vec<EpisodeRow>,
}

/// A history in memory; clones share it.
#[derive(Clone, Default)]
pub(crate) struct MemoryBackend {
    rows: Arc<Mutex<Rows>>,
}

impl MemoryBackend {
    fn rows(&self) -> std::sync::MutexGuard<'_, Rows> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn records_of(&self, cluster: Option<&str>) -> Vec<FindingRecord> {
        let rows = self.rows();
        rows.findings
            .iter()
            .filter(|(_, r)| cluster.is_none_or(|c| r.key.cluster == c))
            .map(|(_, r)| r.clone())
            .collect()
    }
}

impl HistoryBackend for MemoryBackend {
    fn location(&self) -> String {
        "memory".to_string()
    }

    fn records<'a>(&'a mut self, cluster: &'a str) -> BoxFuture<'a, Result<Vec<FindingRecord>, HistoryError>> {
        Box::pin(async move { Ok(self.records_of(Some(cluster))) })
    }

    fn apply<'a>(&'a mut self, writes: &'a [FindingWrite]) -> BoxFuture<'a, Result<(), HistoryError>> {
        Box::pin(async move {
            let mut rows = self.rows();
            for w in writes {
                let id = w.record.key.id();
                // UPSERT_FINDING: a new row, or the same row with the round's values.
                match rows.findings.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, r)) => *r = w.record.clone(),
                    None => rows.findings.push((id.clone(), w.record.clone())),
                }
                if let Some(c) = &w.change {
                    rows.changes.push((id.clone(), c.at, c.manager.clone().unwrap_or_default()));
                }
                match w.episode {
                    Some(EpisodeEdge::Opened(at)) => rows.episodes.push((id, at, None)),
                    Some(EpisodeEdge::Closed(at)) => {
                        for e in rows.episodes.iter_mut().filter(|e| e.0 == id && e.2.is_none()) {
                            e.2 = Some(at);
                        }
                    }
                    None => {}
                }
            }
            Ok(())
        })
    }

    fn prune(&mut self, before: i64) -> BoxFuture<'_, Result<(), HistoryError>> {
        Box::pin(async move {
            let mut rows = self.rows();
            rows.findings.retain(|(_, r)| r.resolved_at.is_none_or(|at| at >= before));
            let Rows { findings, changes, episodes } = &mut *rows;
            let kept = |id: &str| findings.iter().any(|(i, _)| i == id);
            episodes.retain(|(id, _, ended)| ended.is_none_or(|at| at >= before) && kept(id));
            changes.retain(|(id, _, _)| kept(id));
            Ok(())
        })
    }

    fn tables<'a>(&'a mut self, cluster: Option<&'a str>) -> BoxFuture<'a, Result<Tables, HistoryError>> {
        Box::pin(async move {
            let records = self.records_of(cluster);
            let rows = self.rows();
            let mut changes = rows.changes.clone();
            changes.sort_by(|a, b| (a.1, &a.2).cmp(&(b.1, &b.2)));
            let mut episodes = rows.episodes.clone();
            episodes.sort_by_key(|e| e.1);
            Ok((records, changes, episodes))
        })
    }
}
