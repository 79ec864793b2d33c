//! [`RedisTaskStore`]: tasks kept in Redis (or a server that speaks its
//! protocol), so that every replica of a cluster answers for every task.
//!
//! Per task, under a prefix: the record (a JSON string, expiring with the
//! task), the owner's lease (a key that expires unless renewed), a request
//! to cancel (a key) and the caller's answers (a hash). What must be atomic
//! runs as one Lua script.

use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncTypedCommands as _, Script};
use serde_json::{Map, Value};

use super::task_store::{TaskRecord, TaskStore, TaskStoreError};

/// Writes a record unless the stored one has finished; keeps its expiry.
const UPDATE_UNLESS_FINISHED: &str = r"
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local status = cjson.decode(current)['state']['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1
";

/// Keeps an answer in the task's hash, for as long as the task is kept.
const PUT_ANSWER: &str = r"
local left = redis.call('PTTL', KEYS[1])
if left <= 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], left)
return 1
";

/// Records a request to cancel, for as long as the task is kept.
const REQUEST_CANCEL: &str = r"
local left = redis.call('PTTL', KEYS[1])
if left <= 0 then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', left)
return 1
";

/// Returns and deletes every kept answer.
const TAKE_ANSWERS: &str = r"
local answers = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return answers
";

/// How long one operation may take before it fails (a stalled store fails
/// the operation instead of holding a call).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Tasks kept in Redis, shared by every replica connected to it.
///
/// The store is trusted: whoever can write to it can change a task's
/// result. Give it a password or an ACL user (in the URL) and keep it on a
/// private network.
#[derive(Clone)]
pub struct RedisTaskStore {
    connection: ConnectionManager,
    prefix: String,
    update: Script,
    put_answer: Script,
    request_cancel: Script,
    take_answers: Script,
}

impl RedisTaskStore {
    /// Connects to the server at `url` (`redis://[user:password@]host:port[/db]`
    /// or `rediss://` for TLS), and checks that it answers. Keys start with
    /// `toolhost:task:`.
    pub async fn connect(url: &str) -> Result<Self, TaskStoreError> {
        let client = redis::Client::open(url).map_err(unavailable)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(RESPONSE_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(2);
        let mut connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(unavailable)?;
        connection.ping().await.map_err(unavailable)?;
        Ok(Self {
            connection,
            prefix: "toolhost:task:".to_owned(),
            update: Script::new(UPDATE_UNLESS_FINISHED),
            put_answer: Script::new(PUT_ANSWER),
            request_cancel: Script::new(REQUEST_CANCEL),
            take_answers: Script::new(TAKE_ANSWERS),
        })
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    fn sub_key(&self, id: &str, part: &str) -> String {
        format!("{}{id}:{part}", self.prefix)
    }

    /// A connection to use (the manager reconnects by itself).
    fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }
}

fn unavailable(e: redis::RedisError) -> TaskStoreError {
    TaskStoreError::Unavailable(Box::new(e))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl TaskStore for RedisTaskStore {
    async fn create(
        &self,
        record: &TaskRecord,
        retain: Duration,
        lease: Duration,
    ) -> Result<(), TaskStoreError> {
        let text = serde_json::to_string(record).map_err(TaskStoreError::Corrupt)?;
        // The lease first: a task is never seen without it.
        self.renew_lease(&record.id, lease).await?;
        redis::cmd("SET")
            .arg(self.key(&record.id))
            .arg(text)
            .arg("PX")
            .arg(millis(retain))
            .exec_async(&mut self.connection())
            .await
            .map_err(unavailable)
    }

    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, TaskStoreError> {
        let text: Option<String> = self
            .connection()
            .get(self.key(id))
            .await
            .map_err(unavailable)?;
        text.map(|t| serde_json::from_str(&t).map_err(TaskStoreError::Corrupt))
            .transpose()
    }

    async fn update(&self, record: &TaskRecord) -> Result<bool, TaskStoreError> {
        let text = serde_json::to_string(record).map_err(TaskStoreError::Corrupt)?;
        let written: i64 = self
            .update
            .key(self.key(&record.id))
            .arg(text)
            .invoke_async(&mut self.connection())
            .await
            .map_err(unavailable)?;
        Ok(written == 1)
    }

    async fn remove(&self, id: &str) -> Result<(), TaskStoreError> {
        let keys = [
            self.key(id),
            self.sub_key(id, "lease"),
            self.sub_key(id, "cancel"),
            self.sub_key(id, "answers"),
        ];
        self.connection()
            .del(&keys)
            .await
            .map(drop)
            .map_err(unavailable)
    }

    async fn renew_lease(&self, id: &str, lease: Duration) -> Result<(), TaskStoreError> {
        redis::cmd("SET")
            .arg(self.sub_key(id, "lease"))
            .arg("1")
            .arg("PX")
            .arg(millis(lease))
            .exec_async(&mut self.connection())
            .await
            .map_err(unavailable)
    }

    async fn lease_held(&self, id: &str) -> Result<bool, TaskStoreError> {
        self.connection()
            .exists(self.sub_key(id, "lease"))
            .await
            .map_err(unavailable)
    }

    async fn request_cancel(&self, id: &str) -> Result<(), TaskStoreError> {
        let _: i64 = self
            .request_cancel
            .key(self.key(id))
            .key(self.sub_key(id, "cancel"))
            .invoke_async(&mut self.connection())
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn cancel_requested(&self, id: &str) -> Result<bool, TaskStoreError> {
        self.connection()
            .exists(self.sub_key(id, "cancel"))
            .await
            .map_err(unavailable)
    }

    async fn put_answer(&self, id: &str, key: &str, answer: &Value) -> Result<(), TaskStoreError> {
        let text = serde_json::to_string(answer).map_err(TaskStoreError::Corrupt)?;
        let _: i64 = self
            .put_answer
            .key(self.key(id))
            .key(self.sub_key(id, "answers"))
            .arg(key)
            .arg(text)
            .invoke_async(&mut self.connection())
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn take_answers(&self, id: &str) -> Result<Map<String, Value>, TaskStoreError> {
        let flat: Vec<String> = self
            .take_answers
            .key(self.sub_key(id, "answers"))
            .invoke_async(&mut self.connection())
            .await
            .map_err(unavailable)?;
        let mut answers = Map::new();
        for pair in flat.chunks_exact(2) {
            let value = serde_json::from_str(&pair[1]).map_err(TaskStoreError::Corrupt)?;
            answers.insert(pair[0].clone(), value);
        }
        Ok(answers)
    }
}

#[cfg(test)]
mod tests {
    use toolhost_test_support::redis_server::RedisServer;

    use super::*;
    use crate::task_store::contract;

    #[tokio::test]
    async fn n8_the_redis_store_keeps_the_contract() {
        let server = RedisServer::start();
        let store = RedisTaskStore::connect(&server.url).await.unwrap();
        contract::holds(&store, "redis").await;

        // A record someone else wrote, that does not decode, is an error
        // naming it, not a panic or a task.
        let mut connection = store.connection();
        let _: () = redis::cmd("SET")
            .arg(store.key("forged"))
            .arg("{not json")
            .query_async(&mut connection)
            .await
            .unwrap();
        let err = store.get("forged").await.unwrap_err();
        assert!(matches!(err, TaskStoreError::Corrupt(_)), "{err}");
    }

    #[tokio::test]
    async fn n8_a_redis_store_that_does_not_answer_is_an_error_at_connection() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = RedisTaskStore::connect(&format!("redis://127.0.0.1:{port}"))
            .await
            .err()
            .expect("nothing listens there");
        assert!(matches!(err, TaskStoreError::Unavailable(_)), "{err}");
        assert!(RedisTaskStore::connect("not a url").await.is_err());
    }
}
