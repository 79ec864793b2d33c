//! A real Redis (Debian's `redis-server`, from `make setup`) for the tests
//! of the task store and the cluster.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` on a free port of 127.0.0.1, keeping nothing on disk;
/// killed and reaped on drop.
pub struct RedisServer {
    child: Child,
    /// Where to connect: `redis://127.0.0.1:PORT`.
    pub url: String,
}

impl RedisServer {
    /// Starts one and waits until it accepts connections (30 s at most: a
    /// bound that catches a hang). Panics, saying what to install, when
    /// `redis-server` is missing.
    pub fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port on 127.0.0.1")
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is needed: run `make setup`");
        let addr = format!("127.0.0.1:{port}");
        let start = Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "redis-server did not come up"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("redis://{addr}"),
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
