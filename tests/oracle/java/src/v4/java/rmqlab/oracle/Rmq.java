package rmqlab.oracle;

import com.alibaba.fastjson.JSONObject;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.MappedFile;
import org.apache.rocketmq.store.MappedFileQueue;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.index.IndexFile;
import org.apache.rocketmq.store.index.IndexService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * What differs in RocketMQ 4.9.7's store API: everything else is in {@link Oracle}.
 * 4.9.7 has no boundary on getOffsetInQueueByTime (only the one answer), keeps its
 * index service and the commitlog's file queue private (read by reflection), and logs
 * through its own logger (no lines are captured).
 */
final class Rmq {
    static final String[] BOUNDARIES = {"default"};

    private Rmq() {
    }

    /** 4.9 has no topic attributes (no batch queues): {@code attributes} is not used. */
    /** One store made at a time: StoreStatsService's constructor fills a static TreeMap,
     *  which two constructions at once in one JVM can corrupt (a NullPointerException). */
    static synchronized DefaultMessageStore open(MessageStoreConfig c, Map<String, Map<String, String>> attributes) throws IOException {
        return new DefaultMessageStore(c, new BrokerStatsManager("oracle", true), null, new BrokerConfig());
    }

    private static Object field(Class<?> cls, Object o, String name) {
        try {
            java.lang.reflect.Field f = cls.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static IndexService index(DefaultMessageStore s) {
        return (IndexService) field(DefaultMessageStore.class, s, "indexService");
    }

    static List<String> indexFileNames(DefaultMessageStore s) {
        List<String> names = new ArrayList<>();
        for (Object o : (List<?>) field(IndexService.class, index(s), "indexFileList")) {
            names.add(new File(((IndexFile) o).getFileName()).getName());
        }
        return names;
    }

    static void eachLogFile(DefaultMessageStore s, Oracle.LogFileVisitor v) {
        MappedFileQueue q = (MappedFileQueue) field(CommitLog.class, s.getCommitLog(), "mappedFileQueue");
        for (MappedFile mf : q.getMappedFiles()) {
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

    /** 4.9.7's CommitLog.flush() answers where its file queue is flushed to. */
    static long flushedWhere(DefaultMessageStore s) {
        return s.getCommitLog().flush();
    }

    /** 4.9.7 batches carry no broker properties of their own. */
    static void batchProperties(MessageExtBatch b, String properties) {
    }

    static DispatchRequest check(DefaultMessageStore s, ByteBuffer b, boolean crc) {
        return s.getCommitLog().checkMessageAndReturnSize(b, crc, true);
    }

    static List<Oracle.Queue> queues(DefaultMessageStore s) {
        List<Oracle.Queue> out = new ArrayList<>();
        for (Map.Entry<String, ? extends Map<Integer, ConsumeQueue>> t : s.getConsumeQueueTable().entrySet()) {
            for (Map.Entry<Integer, ConsumeQueue> e : t.getValue().entrySet()) {
                ConsumeQueue q = e.getValue();
                Oracle.Queue o = new Oracle.Queue(t.getKey(), e.getKey(), q.getMinOffsetInQueue(), q.getMaxOffsetInQueue(), q.getMaxPhysicOffset());
                for (long i = o.min; i < o.max; i++) {
                    SelectMappedBufferResult r = q.getIndexBuffer(i);
                    if (r == null) {
                        continue;
                    }
                    try {
                        ByteBuffer b = r.getByteBuffer();
                        o.units.add(new long[] {i, b.getLong(0), b.getInt(8), b.getLong(12)});
                    } finally {
                        r.release();
                    }
                }
                out.add(o);
            }
        }
        return out;
    }

    static long byTime(DefaultMessageStore s, String topic, int queueId, long ts, String boundary) {
        return s.getOffsetInQueueByTime(topic, queueId, ts);
    }

    /** RocketMQ 4.9 has no RocksDB queues: nothing written behind dispatch to wait for. */
    static void settle(DefaultMessageStore s) {
    }

    /** RocketMQ 4.9's broker starts nothing beside its store that the harness models. */
    static void afterStart(DefaultMessageStore s) {
    }

    /** RocketMQ 4.9 has no writer behind dispatch but the queues and the index. */
    static void settleWriters(DefaultMessageStore s) {
    }

    /** RocketMQ 4.9 keeps nothing in RocksDB. */
    static com.alibaba.fastjson.JSONObject messageRocksDB(DefaultMessageStore s, com.alibaba.fastjson.JSONArray walk) {
        return null;
    }

    static long maxPhyOffsetInQueues(DefaultMessageStore s) {
        long max = -1;
        for (Map<Integer, ConsumeQueue> m : s.getConsumeQueueTable().values()) {
            for (ConsumeQueue q : m.values()) {
                max = Math.max(max, q.getMaxPhysicOffset());
            }
        }
        return max;
    }

    /** A timer message (5.x: Message.setDelayTimeMs); false where the client has none. */
    static boolean setTimer(org.apache.rocketmq.common.message.Message m, long ms) {
        return false;
    }

    static void logBegin() {
    }

    static List<String> logTake() {
        return new ArrayList<>();
    }

    static void logEnd() {
    }

    /** 4.9 has no RocksDB consume queue: its queues are all loaded. */
    static void touchQueues(DefaultMessageStore s, List<String[]> topicQueues) {
    }

    static PutMessageResult putInnerBatch(DefaultMessageStore s, MessageExtBatch b) {
        throw new UnsupportedOperationException("RocketMQ 4.9 has no batch consume queue (inner batches)");
    }
}
