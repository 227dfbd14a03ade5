package rmqlab.oracle;

import com.alibaba.fastjson.JSONObject;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.index.IndexFile;
import org.apache.rocketmq.store.index.IndexService;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.BatchConsumeQueue;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/** What differs in RocketMQ 5.3.3's store API: everything else is in {@link Oracle}. */
final class Rmq {
    static final String[] BOUNDARIES = {"default", "LOWER", "UPPER"};

    private Rmq() {
    }

    /** DefaultMessageStore with its (protected) IndexService reachable: the raw index
     *  answer (IndexService.queryOffset) is what rmqlab's chain walk must equal. */
    static final class Store extends DefaultMessageStore {
        Store(MessageStoreConfig c, BrokerConfig b, ConcurrentMap<String, TopicConfig> topics) throws IOException {
            super(c, new BrokerStatsManager("oracle", true), null, b, topics);
        }

        IndexService index() {
            return indexService;
        }

        @Override
        public void shutdown() {
            Api.beforeShutdown(this);
            super.shutdown();
        }
    }

    /** RocksDBMessageStore (storeType=defaultRocksDB: consume queues in RocksDB), with
     *  its IndexService reachable as {@link Store}'s. */
    static final class RocksStore extends RocksDBMessageStore {
        RocksStore(MessageStoreConfig c, BrokerConfig b, ConcurrentMap<String, TopicConfig> topics) throws IOException {
            super(c, new BrokerStatsManager("oracle", true), null, b, topics);
        }

        IndexService index() {
            return indexService;
        }
    }

    /** The store a broker makes from these settings (BrokerController.initializeMessageStore):
     *  RocksDBMessageStore for storeType=defaultRocksDB; a DefaultMessageStore that also
     *  writes its queues into RocksDB for rocksdbCQDoubleWriteEnable. */
    /** Stores are made one at a time: StoreStatsService's constructor fills a static
     *  TreeMap (PUT_MESSAGE_ENTIRE_TIME_BUCKETS), so two constructed at once in one JVM can
     *  corrupt it (a NullPointerException in TreeMap.rotateLeft); a broker makes one store. */
    static synchronized DefaultMessageStore open(MessageStoreConfig c, Map<String, Map<String, String>> attributes) throws IOException {
        ConcurrentMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        for (Map.Entry<String, Map<String, String>> t : attributes.entrySet()) {
            TopicConfig tc = new TopicConfig(t.getKey());
            tc.setAttributes(t.getValue());
            topics.put(t.getKey(), tc);
        }
        if (c.isEnableRocksDBStore()) {
            return new RocksStore(c, new BrokerConfig(), topics);
        }
        Store s = new Store(c, new BrokerConfig(), topics);
        if (c.isRocksdbCQDoubleWriteEnable()) {
            Api.doubleWrite(s);
        }
        Api.transStore(s);
        return s;
    }

    static IndexService index(DefaultMessageStore s) {
        return s instanceof RocksStore ? ((RocksStore) s).index() : ((Store) s).index();
    }

    /** A producer's batch to a BatchCQ topic as SendMessageProcessor.sendBatchMessage stores it:
     *  one record (NEED_UNWRAP | INNER_BATCH, INNER_NUM = the entries) whose queue offsets
     *  are INNER_NUM (BatchConsumeQueue.assignQueueOffset adds INNER_BASE). */
    static PutMessageResult putInnerBatch(DefaultMessageStore s, MessageExtBatch b) {
        b.setSysFlag(b.getSysFlag() | MessageSysFlag.NEED_UNWRAP_FLAG | MessageSysFlag.INNER_BATCH_FLAG);
        b.setInnerBatch(true);
        MessageAccessor.setProperties(b, MessageDecoder.string2messageProperties(b.getPropertiesString()));
        int n = MessageDecoder.countInnerMsgNum(ByteBuffer.wrap(b.getBody()));
        MessageAccessor.putProperty(b, MessageConst.PROPERTY_INNER_NUM, String.valueOf(n));
        b.setPropertiesString(MessageDecoder.messageProperties2String(b.getProperties()));
        return s.putMessage(b);
    }

    /** A RocksDB store makes its queue objects when first asked (RocksDBMessageStore.getConsumeQueue):
     *  ask for every (topic, queue) a record of the walk names, so that {@link #queues} lists them. */
    static void touchQueues(DefaultMessageStore s, List<String[]> topicQueues) {
        if (s instanceof RocksStore) {
            for (String[] tq : topicQueues) {
                s.getConsumeQueue(tq[0], Integer.parseInt(tq[1]));
            }
        }
    }

    /** The index files RocketMQ holds in memory, in order (IndexService.indexFileList,
     *  read by reflection: it has no getter). A name twice means a file was created in
     *  the same millisecond as the one before it and opened the same path. */
    static List<String> indexFileNames(DefaultMessageStore s) throws ReflectiveOperationException {
        java.lang.reflect.Field f = IndexService.class.getDeclaredField("indexFileList");
        f.setAccessible(true);
        List<String> names = new ArrayList<>();
        for (Object o : (List<?>) f.get(index(s))) {
            names.add(new File(((IndexFile) o).getFileName()).getName());
        }
        return names;
    }

    /** Every commitlog file: (fileFromOffset, fileSize, its bytes up to the write position). */
    static void eachLogFile(DefaultMessageStore s, Oracle.LogFileVisitor v) {
        for (MappedFile mf : s.getCommitLog().getMappedFileQueue().getMappedFiles()) {
            SelectMappedBufferResult sel = mf.selectMappedBuffer(0);
            if (sel == null) {
                continue;
            }
            try {
                v.visit(mf.getFileFromOffset(), mf.getFileSize(), sel.getByteBuffer(), sel.getSize());
            } finally {
                sel.release();
            }
        }
    }

    /** One message put as a broker puts it: the release's MessageExtBrokerInner with the
     *  properties string in the order given (messageProperties2String of an ordered map)
     *  and its tagsCode. */
    static PutMessageResult put(DefaultMessageStore s, JSONObject m) throws Exception {
        MessageExtBrokerInner msg = new MessageExtBrokerInner();
        Map<String, String> p = Oracle.fill(msg, m);
        msg.setPropertiesString(MessageDecoder.messageProperties2String(p));
        msg.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(p.get(MessageConst.PROPERTY_TAGS)));
        return s.putMessage(msg);
    }

    static long flushedWhere(DefaultMessageStore s) {
        return s.getCommitLog().getFlushedWhere();
    }

    /** The broker's batch properties, appended to every entry (5.x MessageExtBatch). */
    static void batchProperties(MessageExtBatch b, String properties) {
        b.setPropertiesString(properties);
    }

    static DispatchRequest check(DefaultMessageStore s, ByteBuffer b, boolean crc) {
        return s.getCommitLog().checkMessageAndReturnSize(b, crc, false, true);
    }

    /** Every consume queue: topic, queue id, min and max offset, maxPhysicOffset and its
     *  units (queueOffset, pos, size, tagsCode). */
    static List<Oracle.Queue> queues(DefaultMessageStore s) {
        List<Oracle.Queue> out = new ArrayList<>();
        for (Map.Entry<String, ? extends Map<Integer, ConsumeQueueInterface>> t : s.getConsumeQueueTable().entrySet()) {
            for (Map.Entry<Integer, ConsumeQueueInterface> e : t.getValue().entrySet()) {
                ConsumeQueueInterface q = e.getValue();
                Oracle.Queue o = new Oracle.Queue(t.getKey(), e.getKey(), q.getMinOffsetInQueue(), q.getMaxOffsetInQueue(), q.getMaxPhysicOffset());
                boolean batch = q instanceof BatchConsumeQueue;
                for (long i = o.min; i < o.max; i++) {
                    CqUnit u = q.get(i);
                    if (u != null && batch) {  // the unit holding offset i: it starts at its msgBaseOffset
                        o.units.add(new long[] {i, u.getPos(), u.getSize(), u.getTagsCode(), u.getQueueOffset(), u.getBatchNum()});
                    } else if (u != null) {
                        o.units.add(new long[] {u.getQueueOffset(), u.getPos(), u.getSize(), u.getTagsCode()});
                    }
                }
                out.add(o);
            }
        }
        return out;
    }

    static long byTime(DefaultMessageStore s, String topic, int queueId, long ts, String boundary) {
        if (boundary.equals("default")) {
            return s.getOffsetInQueueByTime(topic, queueId, ts);
        }
        return s.getOffsetInQueueByTime(topic, queueId, ts, BoundaryType.valueOf(boundary));
    }

    /** After start: RocksDB queues are written by RocksDBConsumeQueueStore's group-commit
     *  thread, behind dispatch (putMessagePositionInfoWrapper only queues the request):
     *  wait until RocksDB's max physical offset has not moved for 300 ms (at most 30 s),
     *  so that what is read back does not depend on that thread's timing. */
    static void settle(DefaultMessageStore s) throws Exception {
        if (!(s.getQueueStore() instanceof org.apache.rocketmq.store.queue.RocksDBConsumeQueueStore)) {
            return;
        }
        untilStable(() -> String.valueOf(Api.maxPhyOffsetInConsumeQueue(s)));
    }

    /** Wait until {@code probe} has answered the same for 300 ms (at most 30 s): a writer
     *  behind dispatch has caught up. */
    static void untilStable(java.util.concurrent.Callable<String> probe) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        String last = null;
        long stableSince = System.currentTimeMillis();
        while (System.currentTimeMillis() < deadline) {
            String now = probe.call();
            if (!now.equals(last)) {
                last = now;
                stableSince = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - stableSince >= 300) {
                return;
            }
            Thread.sleep(10);
        }
    }

    /** Services a broker starts beside its store (5.4+: the RocksDB timer store). */
    static void afterStart(DefaultMessageStore s) throws Exception {
        Api.afterStart(s);
    }

    /** Writers behind dispatch that are not queues (5.4+: keys and transactions in
     *  RocksDB): what is copied or read back must not depend on their threads' timing. */
    static void settleWriters(DefaultMessageStore s) throws Exception {
        Api.settleMessageRocksDB(s);
    }

    /** What 5.4+'s MessageRocksDBStorage holds (Api.messageRocksDB); null before 5.4. */
    static JSONObject messageRocksDB(DefaultMessageStore s, com.alibaba.fastjson.JSONArray walk) {
        return Api.messageRocksDB(s, walk);
    }

    static long maxPhyOffsetInQueues(DefaultMessageStore s) {
        long max = -1;
        for (Map<Integer, ConsumeQueueInterface> m : s.getConsumeQueueTable().values()) {
            for (ConsumeQueueInterface q : m.values()) {
                max = Math.max(max, q.getMaxPhysicOffset());
            }
        }
        return max;
    }

    /** A timer message (5.x: Message.setDelayTimeMs); false where the client has none. */
    static boolean setTimer(org.apache.rocketmq.common.message.Message m, long ms) {
        m.setDelayTimeMs(ms);
        return true;
    }

    static void logBegin() {
        LogCapture.begin();
    }

    static List<String> logTake() {
        return LogCapture.take();
    }

    static void logEnd() {
        LogCapture.end();
    }
}
