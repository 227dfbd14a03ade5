package rmqlab.oracle;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.index.QueryOffsetResult;
import org.apache.rocketmq.store.queue.AbstractConsumeQueueStore;
import org.apache.rocketmq.store.rocksdb.MessageRocksDBStorage;
import org.apache.rocketmq.store.transaction.TransMessageRocksDBStore;
import org.apache.rocketmq.store.timer.TimerMetrics;
import org.apache.rocketmq.store.timer.rocksdb.TimerMessageRocksDBStore;
import org.apache.rocketmq.store.timer.rocksdb.TimerRocksDBRecord;
import org.apache.rocketmq.store.transaction.TransRocksDBRecord;
import org.rocksdb.RocksDB;

/** RocketMQ 5.4's and 5.5's spelling of what moved after 5.3 (the rest of the v5 harness
 *  is shared), and what only they have: keys and transactions in RocksDB
 *  (MessageRocksDBStorage in rocksdbstore/), and timers there. */
final class Api {
    private Api() {
    }

    /** rocksdbCQDoubleWriteEnable: from 5.4 the setting alone makes the store a
     *  CombineConsumeQueueStore (DefaultMessageStore.createConsumeQueueStore). */
    static void doubleWrite(DefaultMessageStore s) {
    }

    /** AbstractConsumeQueueStore.getMaxPhyOffsetInConsumeQueue (off the interface from 5.4). */
    static long maxPhyOffsetInConsumeQueue(DefaultMessageStore s) throws Exception {
        return ((AbstractConsumeQueueStore) s.getQueueStore()).getMaxPhyOffsetInConsumeQueue();
    }

    /** transRocksDBEnable: the broker gives the store its TransMessageRocksDBStore before
     *  load (BrokerController.initializeMessageStore), which registers it for dispatch and
     *  recovery (5.5: DefaultMessageStore.setTransMessageRocksDBStore). */
    static void transStore(DefaultMessageStore s) {
        if (s.getMessageStoreConfig().isTransRocksDBEnable()) {
            s.setTransMessageRocksDBStore(new TransMessageRocksDBStore(s, null, new InetSocketAddress("127.0.0.1", 10911)));
        }
    }

    /** timerRocksDBEnable: the broker makes, loads and starts a TimerMessageRocksDBStore
     *  beside its store (BrokerController.initializeMessageStore / start), which scans the
     *  timer topic's queue 0 into the timer family (TimerSysTopicScanService, Timeline). */
    static void afterStart(DefaultMessageStore s) throws Exception {
        if (!s.getMessageStoreConfig().isTimerRocksDBEnable()) {
            return;
        }
        String metrics = java.nio.file.Paths.get(s.getMessageStoreConfig().getStorePathRootDir(), "config", "timermetrics").toString();
        TimerMessageRocksDBStore t = new TimerMessageRocksDBStore(s, new TimerMetrics(metrics), null);
        s.setTimerMessageRocksDBStore(t);
        t.load();
        t.start();
    }

    /** The broker shuts its RocksDB transaction and timer stores down before the store
     *  (whose shutdown closes the RocksDB their writers still drain into). */
    static void beforeShutdown(DefaultMessageStore s) {
        TransMessageRocksDBStore t = s.getTransMessageRocksDBStore();
        if (t != null) {
            t.shutdown();
        }
        TimerMessageRocksDBStore timer = s.getTimerMessageRocksDBStore();
        if (timer != null) {
            timer.shutdown();
        }
    }

    /** Keys and transactions in RocksDB are written by their own threads, behind dispatch
     *  (IndexRocksDBStore.IndexBuildService, TransMessageRocksDBStore.TransIndexBuildService),
     *  timers by the timer store's scan and Timeline: wait until both lastOffsetPy and the
     *  timer scan's checkpoint have not moved for 300 ms (at most 30 s). */
    static void settleMessageRocksDB(DefaultMessageStore s) throws Exception {
        MessageStoreConfig c = s.getMessageStoreConfig();
        if (!c.isIndexRocksDBEnable() && !c.isTransRocksDBEnable() && !c.isTimerRocksDBEnable()) {
            return;
        }
        MessageRocksDBStorage db = s.getMessageRocksDBStorage();
        Rmq.untilStable(() -> db.getLastOffsetPy(RocksDB.DEFAULT_COLUMN_FAMILY) + "/" + db.getLastOffsetPy(MessageRocksDBStorage.TRANS_COLUMN_FAMILY)
            + "/" + db.getCheckpointForTimer(MessageRocksDBStorage.TIMER_COLUMN_FAMILY, MessageRocksDBStorage.SYS_TOPIC_SCAN_OFFSET_CHECK_POINT));
    }

    /** What MessageRocksDBStorage answers (null when no RocksDB key or transaction store is
     *  on): each family's lastOffsetPy, the index's lastStoreTimeStamp, every transaction
     *  record (scanRecordsForTrans), and IndexRocksDBStore.queryOffset for every
     *  (topic, KEYS token), (topic, UNIQ_KEY) and (topic, TAGS) of the walk, by index type. */
    static JSONObject messageRocksDB(DefaultMessageStore s, JSONArray walk) {
        MessageStoreConfig c = s.getMessageStoreConfig();
        if (!c.isIndexRocksDBEnable() && !c.isTransRocksDBEnable() && !c.isTimerRocksDBEnable()) {
            return null;
        }
        MessageRocksDBStorage db = s.getMessageRocksDBStorage();
        JSONObject o = new JSONObject(true);
        o.put("indexLastOffsetPy", db.getLastOffsetPy(RocksDB.DEFAULT_COLUMN_FAMILY));
        o.put("indexLastStoreTimestamp", db.getLastStoreTimeStampForIndex(RocksDB.DEFAULT_COLUMN_FAMILY));
        o.put("transLastOffsetPy", db.getLastOffsetPy(MessageRocksDBStorage.TRANS_COLUMN_FAMILY));
        JSONArray trans = new JSONArray();
        List<TransRocksDBRecord> records = db.scanRecordsForTrans(MessageRocksDBStorage.TRANS_COLUMN_FAMILY, 1_000_000, null);
        if (records != null) {
            for (TransRocksDBRecord r : records) {
                JSONObject t = new JSONObject(true);
                t.put("offsetPy", r.getOffsetPy());
                t.put("topic", r.getTopic());
                t.put("uniqKey", r.getUniqKey());
                t.put("checkTimes", r.getCheckTimes());
                t.put("sizePy", r.getSizePy());
                trans.add(t);
            }
        }
        o.put("trans", trans);
        JSONArray timers = new JSONArray();
        List<TimerRocksDBRecord> tr = db.scanRecordsForTimer(MessageRocksDBStorage.TIMER_COLUMN_FAMILY, 1L, Long.MAX_VALUE, 1_000_000, null);
        if (tr != null) {
            for (TimerRocksDBRecord r : tr) {
                JSONObject t = new JSONObject(true);
                t.put("delayTime", r.getDelayTime());
                t.put("uniqKey", r.getUniqKey());
                t.put("offsetPy", r.getOffsetPy());
                t.put("sizePy", r.getSizePy());
                timers.add(t);
            }
        }
        o.put("timers", timers);
        o.put("timerScanOffset", db.getCheckpointForTimer(MessageRocksDBStorage.TIMER_COLUMN_FAMILY, MessageRocksDBStorage.SYS_TOPIC_SCAN_OFFSET_CHECK_POINT));
        JSONArray queries = new JSONArray();
        if (c.isIndexRocksDBEnable()) {
            // queryOffset refuses a window wider than maxRocksDBIndexQueryDays: the widest it takes
            long end = System.currentTimeMillis();
            long begin = end - TimeUnit.DAYS.toMillis(c.getMaxRocksDBIndexQueryDays()) + 1;
            int max = c.getMaxMsgsNumBatch();
            java.util.LinkedHashSet<List<String>> asked = new java.util.LinkedHashSet<>();
            for (List<String> tk : Oracle.walkKeys(walk)) {
                asked.add(tk);
            }
            for (int i = 0; i < walk.size(); i++) {
                JSONObject w = walk.getJSONObject(i);
                if (!"MESSAGE".equals(w.getString("kind"))) {
                    continue;
                }
                org.apache.rocketmq.common.message.MessageExt m = s.lookMessageByOffset(w.getLongValue("physicalOffset"));
                if (m != null && m.getTags() != null && !m.getTags().isEmpty()) {
                    asked.add(List.of(w.getString("topic"), MessageConst.INDEX_TAG_TYPE, m.getTags()));
                }
            }
            for (List<String> q : asked) {
                QueryOffsetResult r = s.getIndexRocksDBStore().queryOffset(q.get(0), q.get(2), max, begin, end, q.get(1), null);
                JSONObject a = new JSONObject(true);
                a.put("topic", q.get(0));
                a.put("type", q.get(1));
                a.put("key", q.get(2));
                a.put("phyOffsets", r == null ? null : r.getPhyOffsets());
                queries.add(a);
            }
        }
        o.put("indexQueries", queries);
        return o;
    }
}
