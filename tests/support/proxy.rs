//! A TCP proxy in front of the fake server that can stop forwarding on
//! the connections it has open, silently (the sockets stay open, bytes are
//! swallowed), as a NAT that lost its table or a dead route does. New
//! connections are forwarded as usual.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

pub struct Proxy {
    addr: SocketAddr,
    /// Connections accepted before the current epoch are frozen.
    epoch: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on 127.0.0.1 and forwards to `target`.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let epoch = Arc::new(AtomicUsize::new(0));
        let shared = Arc::clone(&epoch);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(target).await else {
                    continue;
                };
                let mine = shared.load(Ordering::SeqCst);
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pump(cr, sw, Arc::clone(&shared), mine));
                tokio::spawn(pump(sr, cw, Arc::clone(&shared), mine));
            }
        });
        Proxy { addr, epoch, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every connection open now stops forwarding, for good.
    pub fn freeze_open_connections(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    epoch: Arc<AtomicUsize>,
    mine: usize,
) {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if epoch.load(Ordering::SeqCst) != mine {
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    if epoch.load(Ordering::SeqCst) != mine {
        // Frozen: hold the socket open, say nothing.
        std::future::pending::<()>().await;
    }
    let _ = to.shutdown().await;
}
