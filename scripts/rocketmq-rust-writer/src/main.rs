//! Writes a RocketMQ store with rocketmq-rust's `LocalFileMessageStore`, or reads one back
//! with it, and prints what happened as JSON: the ground truth rmqlab's tests hold its
//! reading of such stores to.
//!
//!   rocketmq-rust-writer write STORE_DIR --case CASE [--messages N] [--seed S]
//!       puts a deterministic workload (topics × queues, KEYS, TAGS, UNIQ_KEY, bodies
//!       0–2,000 bytes; delayed and timer messages rewritten as a broker does), waits
//!       until every record is dispatched (and, with timers, enqueued into the timer
//!       wheel), then shuts down cleanly (`clean`, `timers`, `window-clean`) or aborts the
//!       process without a shutdown (`killed`, `window-killed`: no checkpoint or flush
//!       after the last put).  The `window-*` cases use 16 KiB commitlog files, so that
//!       the log has more files than rocketmq-rust's recovery window (30).
//!       Prints the manifest: per record what was put and what the store answered.
//!   rocketmq-rust-writer read STORE_DIR QUERIES_JSON
//!       starts rocketmq-rust on the store (its own load and recovery), and prints
//!       whether it loaded, the log's offsets, every consume queue's min/max offset, the
//!       answer of `query_message` to each query (a key, or a UNIQ_KEY with index type
//!       "U"), and for a query {"timerSlotMs": T} the timer wheel's slot of time T, with
//!       the timer checkpoint it recovered.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use cheetah_string::CheetahString;
use dashmap::DashMap;
use rocketmq_model::common::config::TopicConfig;
use rocketmq_model::common::message::message_ext_broker_inner::MessageExtBrokerInner;
use rocketmq_model::common::message::MessageConst;
use rocketmq_model::common::message::MessageTrait;
use rocketmq_runtime::ChildServiceContext;
use rocketmq_runtime::RuntimeConfig;
use rocketmq_runtime::RuntimeOwner;
use rocketmq_store::QueryMessageRequest;
use rocketmq_store::BrokerReadStore;
use rocketmq_store::BrokerStorePort;
use rocketmq_store::BrokerWriteStore;
use rocketmq_store::FlushDiskType;
use rocketmq_store::LocalFileMessageStore;
use rocketmq_store::MessageStoreConfig;
use rocketmq_store::PutMessageStatus;
use rocketmq_store::StoreRuntimeConfig;
use serde_json::json;
use serde_json::Value;

const TOPICS: [&str; 3] = ["OrderEvents", "PaymentEvents", "rmq_sys_TRACE_DATA_rust"];
const QUEUES: i32 = 4;
const BORN_BASE_MS: i64 = 1_700_000_000_000;

/// The store's settings: small files so that a few thousand records roll the log,
/// the consume queues and the index several times.  `check_crc`: whether recovery checks
/// body CRCs (true for the writes and the first read-backs; rocketmq-rust's own default,
/// false, for the damaged copies read with `--default-crc`).
fn store_config(root: &str, timers: bool, file_size: usize, check_crc: bool) -> MessageStoreConfig {
    MessageStoreConfig {
        store_path_root_dir: root.into(),
        flush_disk_type: FlushDiskType::AsyncFlush,
        mapped_file_size_commit_log: file_size,
        mapped_file_size_consume_queue: 100 * 20,
        max_hash_slot_num: 128,
        max_index_num: 512,
        check_crc_on_recover: check_crc,
        ha_listen_port: 0,
        timer_wheel_enable: timers,
        ..MessageStoreConfig::default()
    }
}

fn service_context(owner: &RuntimeOwner) -> ChildServiceContext {
    owner.root_context().component("rocketmq-rust-writer")
}

/// The commitlog file size of a case: 16 KiB for the recovery-window cases, else 128 KiB.
fn file_size(case: &str) -> usize {
    if case.starts_with("window") {
        16 * 1024
    } else {
        128 * 1024
    }
}

async fn open_store(ctx: ChildServiceContext, root: &str, timers: bool, file_size: usize, check_crc: bool) -> Option<LocalFileMessageStore> {
    let topic_table: Arc<DashMap<CheetahString, Arc<TopicConfig>>> = Arc::new(DashMap::new());
    let mut store = LocalFileMessageStore::new(
        Arc::new(store_config(root, timers, file_size, check_crc)),
        rocketmq_store_local::commit_log::append::micro_batch::MicroBatchPolicy::disabled(1)
            .expect("a valid micro-batch policy"),
        Arc::new(StoreRuntimeConfig::default()),
        topic_table,
        None,
        false,
        ctx,
    )
    .expect("create the store")
    .expect("a valid timer configuration");
    store.wire_owned_root_dependencies().expect("wire the store");
    store.init().await.expect("init the store");
    if !store.load().await {
        return None;
    }
    store.start().await.expect("start the store");
    Some(store)
}

/// A small deterministic generator (splitmix64), so a seed gives the same workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn message(seq: usize, rng: &mut Rng, case: &str, start_ms: i64) -> (MessageExtBrokerInner, Value) {
    let topic = TOPICS[rng.below(TOPICS.len() as u64) as usize];
    let queue_id = rng.below(QUEUES as u64) as i32;
    let body_len = rng.below(2001) as usize;
    let body: Vec<u8> = (0..body_len).map(|i| ((seq * 31 + i * 7) % 251) as u8).collect();
    let mut uniq = [0u8; 16];
    uniq[..8].copy_from_slice(&rng.next().to_be_bytes());
    uniq[8..].copy_from_slice(&(seq as u64).to_be_bytes());
    let uniq_key = hex_upper(&uniq);
    let keys = match seq % 5 {
        0 => None,
        1 => Some(format!("order-{seq}")),
        2 => Some(format!("order-{seq} shared-{}", seq % 7)),
        3 => Some(format!("k{}", seq % 50)),
        _ => Some(format!("order-{seq}")),
    };
    let tags = if seq % 4 == 3 { None } else { Some(format!("Tag{}", seq % 3)) };

    let mut msg = MessageExtBrokerInner::default();
    let mut real_topic = topic.to_string();
    let mut real_queue = queue_id;
    let mut delay_level = None;
    let mut timer_out_ms = None;
    if case == "timers" && seq % 10 == 5 {
        // a timer message (TIMER_DELIVER_MS) as the broker rewrites it before the put
        // (HookUtils.handleTimerMessage): rmq_sys_wheel_timer queue 0, TIMER_OUT_MS; every
        // other one due two seconds after the first put (it fires while the writer waits),
        // the rest hours ahead (they stay in the wheel)
        let due = if seq % 20 == 5 { start_ms + 2_000 } else { start_ms + 3_600_000 + seq as i64 * 60_000 };
        timer_out_ms = Some(due);
        msg.put_property(CheetahString::from_static_str("REAL_TOPIC"), topic.into());
        msg.put_property(CheetahString::from_static_str("REAL_QID"), queue_id.to_string().into());
        msg.put_property(CheetahString::from_static_str("TIMER_OUT_MS"), due.to_string().into());
        msg.put_property(CheetahString::from_static_str("TIMER_DELIVER_MS"), due.to_string().into());
        real_topic = "rmq_sys_wheel_timer".into();
        real_queue = 0;
    } else if case == "timers" && seq % 10 == 0 {
        // a delayed message as the broker rewrites it before the put
        // (HookUtils.handleScheduleMessage): SCHEDULE_TOPIC_XXXX, queue level − 1
        let level = 1 + (seq / 10 % 3) as i32;
        delay_level = Some(level);
        msg.put_property(CheetahString::from_static_str("REAL_TOPIC"), topic.into());
        msg.put_property(
            CheetahString::from_static_str("REAL_QID"),
            queue_id.to_string().into(),
        );
        msg.put_property(
            CheetahString::from_static_str(MessageConst::PROPERTY_DELAY_TIME_LEVEL),
            level.to_string().into(),
        );
        real_topic = "SCHEDULE_TOPIC_XXXX".into();
        real_queue = level - 1;
    }
    msg.set_topic(real_topic.clone().into());
    msg.message_ext_inner.set_queue_id(real_queue);
    if let Some(k) = &keys {
        msg.set_keys(k.clone().into());
    }
    if let Some(t) = &tags {
        msg.set_tags(t.clone().into());
    }
    msg.put_property(
        CheetahString::from_static_str(MessageConst::PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        uniq_key.clone().into(),
    );
    msg.put_property(CheetahString::from_static_str("seq"), seq.to_string().into());
    msg.set_body(Bytes::from(body.clone()));
    msg.message_ext_inner.set_born_timestamp(BORN_BASE_MS + seq as i64 * 1000);
    let born: SocketAddr = "127.0.0.1:50000".parse().unwrap();
    let store_host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
    msg.message_ext_inner.set_born_host(born);
    msg.message_ext_inner.set_store_host(store_host);
    if let Some(t) = &tags {
        msg.tags_code = MessageExtBrokerInner::tags_string_to_tags_code(t);
    }
    let entry = json!({
        "seq": seq,
        "topic": real_topic,
        "queueId": real_queue,
        "realTopic": topic,
        "realQueueId": queue_id,
        "delayLevel": delay_level,
        "timerOutMs": timer_out_ms,
        "keys": keys,
        "tags": tags,
        "uniqKey": uniq_key,
        "bodyLength": body_len,
        "bornTimestamp": BORN_BASE_MS + seq as i64 * 1000,
    });
    (msg, entry)
}

async fn write(ctx: ChildServiceContext, root: &str, case: &str, count: usize, seed: u64) {
    let timers = case == "timers";
    let mut store = open_store(ctx, root, timers, file_size(case), true).await.expect("load the store");
    let mut rng = Rng(seed);
    let mut records = Vec::with_capacity(count);
    let start_ms = now_ms();
    for seq in 0..count {
        let (msg, mut entry) = message(seq, &mut rng, case, start_ms);
        let result = store.put_message(msg).await;
        let status = result.put_message_status();
        entry["putStatus"] = json!(format!("{status:?}"));
        if let Some(append) = result.append_message_result() {
            entry["physicalOffset"] = json!(append.wrote_offset);
            entry["size"] = json!(append.wrote_bytes);
            entry["queueOffset"] = json!(append.logics_offset);
            entry["storeTimestamp"] = json!(append.store_timestamp);
        }
        assert_eq!(status, PutMessageStatus::PutOk, "put {seq}");
        records.push(entry);
    }
    // every record dispatched (consume queues and index) before the end
    for _ in 0..600 {
        if store.dispatch_behind_bytes() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    if timers {
        // every timer message enqueued into the wheel, and the ones due soon fired (put
        // back to their real topics) and dispatched
        let timer = store.get_timer_message_store().cloned().expect("the timer store");
        for _ in 0..600 {
            if timer.get_enqueue_behind_messages() <= 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let wait = (start_ms + 5_000 - now_ms()).max(0) as u64;
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
        for _ in 0..600 {
            if store.dispatch_behind_bytes() == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let end = store.get_max_phy_offset();
    let manifest = json!({
        "writer": "rocketmq-rust",
        "crate": "rocketmq-store 1.0.0",
        "case": case,
        "seed": seed,
        "maxPhyOffset": end,
        "messages": records,
    });
    println!("{}", serde_json::to_string_pretty(&manifest).unwrap());
    if case.ends_with("killed") {
        // as SIGKILL: no shutdown, no checkpoint, the abort file left behind
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        std::process::abort();
    }
    store.shutdown().await;
}

async fn read(ctx: ChildServiceContext, root: &str, queries: &str, file_size: usize, check_crc: bool) {
    let timers = std::path::Path::new(root).join("timer-v2").exists();
    let Some(store) = open_store(ctx, root, timers, file_size, check_crc).await else {
        println!("{}", serde_json::to_string_pretty(&json!({"loaded": false})).unwrap());
        return;
    };
    // what recovery and start() dispatch again (its queues and index) is done before the
    // queries: start() moves the reput back after it began (do_recheck_reput_offset_from_dispatchers),
    // so nothing behind for ten polls running, not once
    let mut settled = 0;
    for _ in 0..600 {
        settled = if store.dispatch_behind_bytes() == 0 { settled + 1 } else { 0 };
        if settled >= 10 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let queries: Value = serde_json::from_str(&std::fs::read_to_string(queries).unwrap()).unwrap();
    let mut queues = Vec::new();
    let mut topics: Vec<String> = TOPICS.iter().map(|t| t.to_string()).collect();
    topics.push("SCHEDULE_TOPIC_XXXX".into());
    topics.push("rmq_sys_wheel_timer".into());
    for topic in &topics {
        for queue_id in 0..QUEUES {
            let t: CheetahString = topic.clone().into();
            let max = store.get_max_offset_in_queue(&t, queue_id);
            if max == 0 {
                continue;
            }
            queues.push(json!({
                "topic": topic,
                "queueId": queue_id,
                "minOffset": store.get_min_offset_in_queue(&t, queue_id),
                "maxOffset": max,
            }));
        }
    }
    let mut answers = Vec::new();
    let timer = store.get_timer_message_store().cloned();
    let mut slots = Vec::new();
    for q in queries.as_array().unwrap() {
        if let Some(t) = q["timerSlotMs"].as_i64() {
            let slot = timer.as_ref().and_then(|ts| ts.get_timer_wheel_slot(t));
            slots.push(json!({
                "timerSlotMs": t,
                "slot": slot.map(|s| json!({"timeMs": s.time_ms, "firstPos": s.first_pos, "lastPos": s.last_pos, "num": s.num})),
            }));
            continue;
        }
        let topic: CheetahString = q["topic"].as_str().unwrap().to_string().into();
        let key: CheetahString = q["key"].as_str().unwrap().to_string().into();
        let mut request = QueryMessageRequest::legacy(&topic, &key, 64, 0, i64::MAX);
        request.index_type = q["indexType"].as_str().map(|s| s.to_string().into());
        let found = store.query_message_with_options(&request).await;
        let mut offsets: Vec<i64> = found
            .map(|r| {
                r.message_maped_list
                    .iter()
                    .map(|m| i64::from_be_bytes(m.get_buffer()[28..36].try_into().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        offsets.sort();
        answers.push(json!({"query": q, "physicalOffsets": offsets}));
    }
    let checkpoint = timer.as_ref().and_then(|ts| ts.timer_checkpoint_snapshot()).map(|c| {
        json!({
            "lastReadTimeMs": c.last_read_time_ms(),
            "lastTimerLogFlushPos": c.last_timer_log_flush_pos(),
            "lastTimerQueueOffset": c.last_timer_queue_offset(),
        })
    });
    let mut out = json!({
        "loaded": true,
        "minPhyOffset": store.get_min_phy_offset(),
        "maxPhyOffset": store.get_max_phy_offset(),
        "queues": queues,
        "answers": answers,
        "dispatchBehindBytes": store.dispatch_behind_bytes(),
    });
    if timers {
        out["timerCheckpoint"] = json!(checkpoint);
        out["timerSlots"] = json!(slots);
    }
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
    let mut store = store;
    store.shutdown().await;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let owner = RuntimeOwner::plan(RuntimeConfig::server_default("rocketmq-rust-writer"))
        .expect("a valid runtime configuration")
        .build()
        .expect("start the runtime");
    let ctx = service_context(&owner);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let flag = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].clone())
            .unwrap_or_else(|| default.to_string())
    };
    match args.get(1).map(String::as_str) {
        Some("write") => {
            let case = flag("--case", "clean");
            let count: usize = flag("--messages", "600").parse().unwrap();
            let seed: u64 = flag("--seed", "44").parse().unwrap();
            rt.block_on(write(ctx, &args[2], &case, count, seed));
        }
        Some("read") => {
            let size: usize = flag("--file-size", "131072").parse().unwrap();
            rt.block_on(read(ctx, &args[2], &args[3], size, !args.iter().any(|a| a == "--default-crc")))
        }
        _ => {
            eprintln!("usage: rocketmq-rust-writer write DIR --case C | read DIR QUERIES");
            std::process::exit(2);
        }
    }
}
