//! Online block lists: shared lists of Lichess users (one user id a line;
//! blank lines and `#` comments ignored), fetched from
//! `challenge.online_block_lists` at start and every
//! `challenge.block_list_refresh_secs`, and applied to challenges both
//! ways (theirs declined, ours not sent). Each list's last good copy is
//! kept in `engine.state_dir/block-lists.json`: a URL that fails keeps the
//! list it had, across restarts too.

use crate::bot::store::state;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// The cache file's name.
pub const FILE: &str = "block-lists.json";
/// A fetch gives up after this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
/// A list larger than this is refused (a wrong URL, not a list).
const MAX_BYTES: usize = 4 << 20;

/// What one fetch of a list came to: its users, or why not.
pub type Fetched = (String, Result<Vec<String>, String>);

/// The lists by URL, and their users together.
#[derive(Debug, Default)]
pub struct BlockLists {
    lists: BTreeMap<String, Vec<String>>,
    users: BTreeSet<String>,
    file: Option<PathBuf>,
}

impl BlockLists {
    /// The last good copies of the lists of `urls`, from the state
    /// directory if there is one (a list no longer configured is dropped).
    pub fn load(urls: &[String], state_dir: Option<&Path>) -> BlockLists {
        let file = state::path(state_dir, FILE);
        let mut lists: BTreeMap<String, Vec<String>> =
            file.as_deref().and_then(state::load).unwrap_or_default();
        lists.retain(|url, _| urls.contains(url));
        let mut block = BlockLists {
            lists,
            users: BTreeSet::new(),
            file,
        };
        block.rebuild();
        block
    }

    /// Whether `user` (any case) is on a list.
    pub fn blocks(&self, user: &str) -> bool {
        self.users.contains(&user.to_lowercase())
    }

    /// Every user on the lists, lower case.
    pub fn users(&self) -> &BTreeSet<String> {
        &self.users
    }

    /// A fetch of `url` came back: a good list replaces the old copy; a
    /// failure keeps it.
    pub fn update(&mut self, (url, result): Fetched) {
        match result {
            Ok(users) => {
                tracing::info!(url = %url, users = users.len(), "online block list fetched");
                self.lists.insert(url, users);
                self.rebuild();
                if let Some(file) = &self.file {
                    state::save(file, &self.lists);
                }
            }
            Err(why) => {
                let kept = self.lists.get(&url).map_or(0, Vec::len);
                tracing::warn!(url = %url, kept, "online block list not fetched: {why}; the last copy stays");
            }
        }
    }

    fn rebuild(&mut self) {
        self.users = self.lists.values().flatten().cloned().collect();
    }
}

/// The user ids of a list's text: one a line, lower case; blank lines and
/// `#` comments (whole lines or after an id) are skipped, as is anything
/// that is not a Lichess username.
pub fn parse(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|id| crate::config::is_user_id(id))
        .map(str::to_lowercase)
        .collect()
}

/// Fetches every list in the background; each result comes back on `tx`.
pub fn spawn_fetch<M: From<Fetched> + Send + 'static>(
    urls: Vec<String>,
    tx: mpsc::UnboundedSender<M>,
) {
    tokio::spawn(async move {
        let client = match reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .user_agent(concat!("kaissa/", env!("CARGO_PKG_VERSION")))
            .build()
        {
            Ok(client) => client,
            Err(e) => {
                for url in urls {
                    let _ = tx.send(M::from((url, Err(e.to_string()))));
                }
                return;
            }
        };
        for url in urls {
            let result = fetch(&client, &url).await;
            if tx.send(M::from((url, result))).is_err() {
                return;
            }
        }
    });
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<String>, String> {
    let mut response = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BYTES {
            return Err(format!("larger than {MAX_BYTES} bytes"));
        }
    }
    Ok(parse(&String::from_utf8_lossy(&body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_a_failed_fetch_keeps_the_last_copy() {
        assert_eq!(
            parse("# shared list\nSpammer\n\n  other_bot  # since May\nnot a name\nok-1\n"),
            ["spammer", "other_bot", "ok-1"]
        );
        let dir = tempfile::tempdir().unwrap();
        let urls = ["http://a/list".to_owned(), "http://b/list".to_owned()];
        let mut lists = BlockLists::load(&urls, Some(dir.path()));
        lists.update((urls[0].clone(), Ok(vec!["spammer".into()])));
        lists.update((urls[1].clone(), Ok(vec!["loop".into()])));
        assert!(lists.blocks("Spammer") && lists.blocks("LOOP"));
        lists.update((urls[0].clone(), Err("HTTP 500".into())));
        assert!(lists.blocks("spammer"));
        // Kept across restarts; a URL taken out of the configuration goes.
        let again = BlockLists::load(&urls[1..], Some(dir.path()));
        assert!(again.blocks("loop") && !again.blocks("spammer"));
    }
}
