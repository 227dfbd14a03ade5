package rmqlab.oracle;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.parser.Feature;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.index.QueryOffsetResult;

/**
 * Apache RocketMQ's own {@code DefaultMessageStore}, serving rmqlab's tests as an oracle.
 * What differs between RocketMQ releases (5.3.3, 4.9.7) is in {@code Rmq}, one per release
 * ({@code src/v5}, {@code src/v4}); the Maven profile {@code rocketmq4} builds the other.
 *
 * <p>One JSON object per line on stdin, one answer per line on stdout (same {@code id}),
 * requests run concurrently (RocketMQ's {@code shutdown()} sleeps three seconds, so a
 * pool keeps the JVM busy). Operations:
 * <ul>
 *   <li>{@code write}: put the JSON lines of {@code input} (rmqlab's {@code dump --json}
 *       shape; a line {@code {"batch": [...]}} is one {@code MessageExtBatch}) into a new
 *       store at {@code dir}, then shut down cleanly; with {@code crashCopy}, first copy
 *       the live store's files there once every record is dispatched: what a SIGKILL
 *       leaves (the page cache survives a killed process; the abort file and a
 *       pre-allocated next file stay).</li>
 *   <li>{@code load}: open {@code dir} as a broker starts (load = recovery, then start)
 *       and report what it reads, in the shape of the reference stores' dump.json
 *       (recovery mode, end offset, log lines, the commitlog walk, every consume-queue
 *       unit, getMessage, getOffsetInQueueByTime, index answers); then put
 *       {@code append} if given, and shut down cleanly.</li>
 *   <li>{@code hold} / {@code release}: keep a store open (its lock taken) until released.</li>
 * </ul>
 * Every store setting comes from {@code config} (RocketMQ's names, applied with
 * {@code MixAll.properties2Object} as a broker applies broker.conf).
 */
public final class Oracle {
    /** Where answers go: the file {@code -Doracle.answers} names (the harness passes a pipe
     *  of its own, /dev/fd/N), else stdout.  Not stdout when it can be helped: native code
     *  (RocksDB's JNI) writes to the process's fd 1 directly, between the writes of a long
     *  answer, and once split one (the 5.5.0 long run, seed 20456). */
    private static final PrintStream OUT = answers();
    private static final Map<String, DefaultMessageStore> HELD = new ConcurrentHashMap<>();

    private Oracle() {
    }

    private static PrintStream answers() {
        String path = System.getProperty("oracle.answers");
        if (path == null) {
            return System.out;
        }
        try {
            return new PrintStream(new java.io.FileOutputStream(path), false, StandardCharsets.UTF_8);
        } catch (java.io.FileNotFoundException e) {
            throw new IllegalStateException("oracle.answers=" + path + ": " + e.getMessage(), e);
        }
    }

    public static void main(String[] args) throws Exception {
        // stdout carries answers only; anything else that prints goes to stderr
        System.setOut(System.err);
        int threads = Integer.parseInt(System.getProperty("oracle.threads", "6"));
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        answer(new JSONObject(Map.of("id", 0, "ok", true, "ready", true, "rocketmqVersion", rocketmqVersion())));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject req = JSON.parseObject(line, Feature.OrderedField);
            if ("quit".equals(req.getString("op"))) {
                break;
            }
            pool.submit(() -> serve(req));
        }
        pool.shutdown();
        pool.awaitTermination(10, TimeUnit.MINUTES);
        for (DefaultMessageStore s : HELD.values()) {
            Shutdown.quick(s);
        }
        System.exit(0);
    }

    private static String rocketmqVersion() {
        Package p = DefaultMessageStore.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v != null ? v : System.getProperty("oracle.rocketmq.version", "unknown");
    }

    private static void serve(JSONObject req) {
        Thread.currentThread().setName("oracle-" + req.get("id"));
        JSONObject ans;
        Rmq.logBegin();
        try {
            switch (req.getString("op")) {
                case "write":
                    ans = write(req);
                    break;
                case "load":
                    ans = load(req);
                    break;
                case "hold":
                    ans = hold(req);
                    break;
                case "release":
                    ans = release(req);
                    break;
                case "ping":
                    ans = new JSONObject();
                    break;
                case "bench_put":
                case "bench_recover":
                    // the engine benchmark's side (src/v5 Bench: 5.x only, so by name)
                    ans = (JSONObject) Class.forName("rmqlab.oracle.Bench")
                        .getDeclaredMethod("bench_put".equals(req.getString("op")) ? "put" : "recover", JSONObject.class).invoke(null, req);
                    break;
                default:
                    throw new IllegalArgumentException("unknown op " + req.getString("op"));
            }
            ans.put("ok", true);
        } catch (Throwable e) {
            ans = new JSONObject(true);
            ans.put("ok", false);
            ans.put("error", String.valueOf(e));
            StringWriter sw = new StringWriter();
            e.printStackTrace(new PrintWriter(sw));
            ans.put("trace", sw.toString());
            ans.put("logLines", Rmq.logTake());
        } finally {
            Rmq.logEnd();
        }
        ans.put("id", req.get("id"));
        answer(ans);
    }

    private static synchronized void answer(JSONObject ans) {
        OUT.println(JSON.toJSONString(ans, SerializerFeature.WriteMapNullValue, SerializerFeature.DisableCircularReferenceDetect));
        OUT.flush();
    }

    // -- the store ----------------------------------------------------------------------------

    static MessageStoreConfig storeConfig(String dir, JSONObject config) {
        MessageStoreConfig c = new MessageStoreConfig();
        Properties p = new Properties();
        // answers complete, not cut at RocketMQ's default of 64 (4096: a request may set it back)
        p.setProperty("maxMsgsNumBatch", "4096");
        p.setProperty("haListenPort", "0");
        if (config != null) {
            for (Map.Entry<String, Object> e : config.entrySet()) {
                p.setProperty(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        MixAll.properties2Object(p, c);
        c.setStorePathRootDir(dir);
        if (config == null || !config.containsKey("storePathCommitLog")) {
            // a request may spread the log over several directories (MultiPathMappedFileQueue)
            c.setStorePathCommitLog(dir + File.separator + "commitlog");
        }
        return c;
    }

    /** {@code topics}: each topic's attributes (TopicConfig.attributes, e.g. {@code queue.type=BatchCQ}),
     *  the topic table a broker hands its store; null for none. */
    static DefaultMessageStore open(String dir, JSONObject config, JSONObject topics) throws Exception {
        Map<String, Map<String, String>> attributes = new LinkedHashMap<>();
        if (topics != null) {
            for (Map.Entry<String, Object> t : topics.entrySet()) {
                Map<String, String> a = new LinkedHashMap<>();
                for (Map.Entry<String, Object> e : ((JSONObject) t.getValue()).entrySet()) {
                    a.put(e.getKey(), String.valueOf(e.getValue()));
                }
                attributes.put(t.getKey(), a);
            }
        }
        return Rmq.open(storeConfig(dir, config), attributes);
    }

    /** A store loaded (recovered) and started, as a broker starts it. */
    static DefaultMessageStore started(String dir, JSONObject config, JSONObject topics) throws Exception {
        DefaultMessageStore store = open(dir, config, topics);
        if (!store.load()) {
            throw new IllegalStateException("load() failed for " + dir);
        }
        store.start();
        Rmq.afterStart(store);
        if (store.getCommitLog() instanceof org.apache.rocketmq.store.dledger.DLedgerCommitLog) {
            // a DLedger log takes puts once its one-member group elected it leader
            io.openmessaging.storage.dledger.DLedgerServer server =
                ((org.apache.rocketmq.store.dledger.DLedgerCommitLog) store.getCommitLog()).getdLedgerServer();
            long deadline = System.currentTimeMillis() + 30_000;
            while (!server.getMemberState().isLeader() && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
        }
        return store;
    }

    // -- write --------------------------------------------------------------------------------

    static JSONObject write(JSONObject req) throws Exception {
        String dir = req.getString("dir");
        DefaultMessageStore store = started(dir, req.getJSONObject("config"), req.getJSONObject("topics"));
        JSONObject ans = new JSONObject(true);
        try {
            ans.put("results", putAll(store, req.getString("input")));
            waitDispatched(store);
            Rmq.settleWriters(store);
            // the index files as named while writing: two named alike in one millisecond
            // share a path, and the second's header then governs the first's slots
            ans.put("indexFiles", Rmq.indexFileNames(store));
            String crash = req.getString("crashCopy");
            if (crash != null) {
                copyTree(Paths.get(dir), Paths.get(crash));
            }
        } finally {
            Shutdown.quick(store);
        }
        ans.put("logLines", storeLines(Rmq.logTake(), dir));
        return ans;
    }

    static void waitDispatched(DefaultMessageStore store) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (store.dispatchBehindBytes() > 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(5);
        }
    }

    static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    static JSONArray putAll(DefaultMessageStore store, String input) throws Exception {
        JSONArray results = new JSONArray();
        if (input == null) {
            return results;
        }
        for (String line : Files.readAllLines(Paths.get(input), StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject m = JSON.parseObject(line, Feature.OrderedField);
            PutMessageResult r;
            if (m.containsKey("batch") && m.getBooleanValue("inner")) {
                r = Rmq.putInnerBatch(store, batch(m));
            } else if (m.containsKey("batch")) {
                r = store.putMessages(batch(m));
            } else {
                r = Rmq.put(store, m);
            }
            results.add(result(r));
        }
        return results;
    }

    static JSONObject result(PutMessageResult r) {
        JSONObject o = new JSONObject(true);
        o.put("status", r.getPutMessageStatus().name());
        if (r.getAppendMessageResult() != null) {
            o.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
            o.put("wroteBytes", r.getAppendMessageResult().getWroteBytes());
            o.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            o.put("msgId", r.getAppendMessageResult().getMsgId());
            o.put("storeTimestamp", r.getAppendMessageResult().getStoreTimestamp());
            o.put("msgNum", r.getAppendMessageResult().getMsgNum());
        }
        return o;
    }

    static InetSocketAddress host(String s, String dflt) throws Exception {
        String h = s == null ? dflt : s;
        int i = h.lastIndexOf(':');
        return new InetSocketAddress(InetAddress.getByName(h.substring(0, i)), Integer.parseInt(h.substring(i + 1)));
    }

    static Map<String, String> props(JSONObject m) {
        Map<String, String> p = new LinkedHashMap<>();
        JSONObject o = m.getJSONObject("properties");
        if (o != null) {
            for (Map.Entry<String, Object> e : o.entrySet()) {
                p.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        return p;
    }

    /** One message as a broker hands it to the store (SendMessageProcessor's fields). */
    /** A message's fields as a broker hands it to the store (SendMessageProcessor's
     *  fields), on the release's MessageExtBrokerInner ({@code Rmq.put} makes it and adds
     *  the properties string and tagsCode); returns the properties in the order given. */
    static Map<String, String> fill(MessageExt msg, JSONObject m) throws Exception {
        msg.setTopic(m.getString("topic"));
        msg.setQueueId(m.getIntValue("queue_id"));
        msg.setFlag(m.getIntValue("flag"));
        msg.setSysFlag(m.getIntValue("sys_flag"));
        String body = m.getString("body");
        msg.setBody(body == null ? new byte[0] : Base64.getDecoder().decode(body));
        Map<String, String> p = props(m);
        MessageAccessor.setProperties(msg, p);
        Long born = m.getLong("born_timestamp");
        msg.setBornTimestamp(born == null ? System.currentTimeMillis() : born);
        msg.setBornHost(host(m.getString("born_host"), "127.0.0.1:50000"));
        msg.setStoreHost(host(m.getString("store_host"), "127.0.0.1:10911"));
        msg.setReconsumeTimes(m.getIntValue("reconsume_times"));
        msg.setPreparedTransactionOffset(m.getLongValue("prepared_transaction_offset"));
        return p;
    }

    /** A producer's batch (Java MessageBatch.encode) as the broker hands it to putMessages. */
    static MessageExtBatch batch(JSONObject m) throws Exception {
        JSONArray entries = m.getJSONArray("batch");
        List<Message> msgs = new ArrayList<>();
        String topic = m.getString("topic");
        for (int i = 0; i < entries.size(); i++) {
            JSONObject e = entries.getJSONObject(i);
            Message x = new Message();
            x.setTopic(topic != null ? topic : e.getString("topic"));
            x.setFlag(e.getIntValue("flag"));
            String body = e.getString("body");
            x.setBody(body == null ? new byte[0] : Base64.getDecoder().decode(body));
            MessageAccessor.setProperties(x, props(e));
            msgs.add(x);
            if (topic == null) {
                topic = x.getTopic();
            }
        }
        MessageExtBatch b = new MessageExtBatch();
        b.setTopic(topic);
        b.setQueueId(m.getIntValue("queue_id"));
        b.setBody(MessageDecoder.encodeMessages(msgs));
        b.setSysFlag(m.getIntValue("sys_flag"));
        Long born = m.getLong("born_timestamp");
        b.setBornTimestamp(born == null ? System.currentTimeMillis() : born);
        b.setBornHost(host(m.getString("born_host"), "127.0.0.1:50000"));
        b.setStoreHost(host(m.getString("store_host"), "127.0.0.1:10911"));
        Rmq.batchProperties(b, MessageDecoder.messageProperties2String(props(m)));
        return b;
    }

    // -- hold / release -----------------------------------------------------------------------

    static JSONObject hold(JSONObject req) throws Exception {
        String dir = req.getString("dir");
        HELD.put(dir, started(dir, req.getJSONObject("config"), req.getJSONObject("topics")));
        return new JSONObject(true);
    }

    static JSONObject release(JSONObject req) {
        DefaultMessageStore store = HELD.remove(req.getString("dir"));
        if (store != null) {
            Shutdown.quick(store);
        }
        return new JSONObject(true);
    }

    // -- load: what RocketMQ reads ------------------------------------------------------------

    static List<String> storeLines(List<String> lines, String dir) {
        List<String> out = new ArrayList<>(lines.size());
        for (String l : lines) {
            out.add(l.replace(dir, "<store>"));
        }
        return out;
    }

    static JSONObject load(JSONObject req) throws Exception {
        String dir = req.getString("dir");
        JSONObject ans = new JSONObject(true);
        JSONObject before = new JSONObject(true);
        File abort = new File(dir, "abort");
        before.put("abortFileExists", abort.exists());
        ans.put("beforeLoad", before);
        DefaultMessageStore store = open(dir, req.getJSONObject("config"), req.getJSONObject("topics"));
        boolean loaded = store.load();
        JSONObject rec = new JSONObject(true);
        rec.put("loadResult", loaded);
        rec.put("mode", before.getBooleanValue("abortFileExists") ? "abnormal (abort file present)" : "normal");
        if (!loaded) {
            rec.put("logLines", storeLines(Rmq.logTake(), dir));
            ans.put("recovery", rec);
            return ans;
        }
        rec.put("commitLogMinOffsetAfterRecovery", store.getMinPhyOffset());
        rec.put("commitLogMaxOffsetAfterRecovery", store.getMaxPhyOffset());
        rec.put("commitLogFlushedWhere", Rmq.flushedWhere(store));
        rec.put("maxPhyOffsetInConsumeQueueAfterRecovery", Rmq.maxPhyOffsetInQueues(store));
        rec.put("indexFiles", Rmq.indexFileNames(store));
        rec.put("logLines", storeLines(Rmq.logTake(), dir));
        ans.put("recovery", rec);
        try {
            store.start();
            Rmq.afterStart(store);
            JSONObject after = new JSONObject(true);
            after.put("commitLogMinOffset", store.getMinPhyOffset());
            after.put("commitLogMaxOffset", store.getMaxPhyOffset());
            after.put("dispatchBehindBytes", store.dispatchBehindBytes());
            ans.put("afterStart", after);
            Rmq.settle(store);  // RocksDB queues: read back once their writer thread has caught up
            JSONArray walk = walk(store);
            ans.put("commitLogWalk", walk);
            Rmq.touchQueues(store, walkQueues(walk));
            ans.put("consumeQueues", queues(store));
            ans.put("indexQueries", indexQueries(store, walk));
            ans.put("messageRocksDB", Rmq.messageRocksDB(store, walk));
            if (req.getString("append") != null) {
                ans.put("appendResults", putAll(store, req.getString("append")));
                waitDispatched(store);
                Rmq.settleWriters(store);
            }
        } finally {
            Shutdown.quick(store);
        }
        ans.put("shutdownLogLines", storeLines(Rmq.logTake(), dir));
        return ans;
    }

    /** Every record from the first file to the end of the log, with RocketMQ's own parser
     *  (CommitLog.checkMessageAndReturnSize, CRCs checked as configured). */
    interface LogFileVisitor {
        void visit(long fileFromOffset, int fileSize, ByteBuffer buf, int limit);
    }

    static JSONArray walk(DefaultMessageStore store) {
        JSONArray out = new JSONArray();
        boolean crc = store.getMessageStoreConfig().isCheckCRCOnRecover();
        Rmq.eachLogFile(store, (base, fileSize, buf, limit) -> {
            int pos = 0;
            while (pos < limit) {
                buf.position(pos);
                DispatchRequest d = Rmq.check(store, buf.slice(), crc);
                JSONObject w = new JSONObject(true);
                w.put("physicalOffset", base + pos);
                int size = d.getMsgSize();
                if (d.isSuccess() && size > 0) {
                    w.put("kind", "MESSAGE");
                    w.put("size", size);
                    w.put("topic", d.getTopic());
                    w.put("queueId", d.getQueueId());
                    w.put("queueOffset", d.getConsumeQueueOffset());
                    w.put("tagsCode", d.getTagsCode());
                    w.put("keys", d.getKeys());
                    w.put("uniqKey", d.getUniqKey());
                    w.put("sysFlag", d.getSysFlag());
                    w.put("storeTimestamp", d.getStoreTimestamp());
                    w.put("preparedTransactionOffset", d.getPreparedTransactionOffset());
                    out.add(w);
                    pos += size;
                } else if (d.isSuccess() && size == 0) {
                    w.put("kind", "BLANK");
                    w.put("blankTotalSizeField", buf.getInt(pos));
                    w.put("bytesToFileEnd", fileSize - pos);
                    out.add(w);
                    break;
                } else {
                    w.put("kind", "INVALID");
                    w.put("size", size);
                    out.add(w);
                    break;
                }
            }
        });
        return out;
    }

    /** (topic, queueId) of every record of the walk, once each. */
    static List<String[]> walkQueues(JSONArray walk) {
        LinkedHashSet<String> seen = new LinkedHashSet<>();
        List<String[]> out = new ArrayList<>();
        for (int i = 0; i < walk.size(); i++) {
            JSONObject w = walk.getJSONObject(i);
            if ("MESSAGE".equals(w.getString("kind")) && seen.add(w.getString("topic") + "\u0000" + w.getIntValue("queueId"))) {
                out.add(new String[] {w.getString("topic"), String.valueOf(w.getIntValue("queueId"))});
            }
        }
        return out;
    }

    static String hostString(java.net.SocketAddress a) {
        InetSocketAddress s = (InetSocketAddress) a;
        return s.getAddress().getHostAddress() + ":" + s.getPort();
    }

    /** One consume queue as RocketMQ holds it after loading. */
    static final class Queue {
        final String topic;
        final int queueId;
        final long min;
        final long max;
        final long maxPhysicOffset;
        final List<long[]> units = new ArrayList<>(); // queueOffset, pos, size, tagsCode

        Queue(String topic, int queueId, long min, long max, long maxPhysicOffset) {
            this.topic = topic;
            this.queueId = queueId;
            this.min = min;
            this.max = max;
            this.maxPhysicOffset = maxPhysicOffset;
        }
    }

    static JSONObject queues(DefaultMessageStore store) {
        JSONObject out = new JSONObject(true);
        for (Queue q : Rmq.queues(store)) {
            JSONObject o = new JSONObject(true);
            o.put("topic", q.topic);
            o.put("queueId", q.queueId);
            o.put("minOffset", q.min);
            o.put("maxOffset", q.max);
            o.put("maxPhysicOffset", q.maxPhysicOffset);
            JSONArray units = new JSONArray();
            JSONArray msgs = new JSONArray();
            List<Long> times = new ArrayList<>();
            for (long[] u : q.units) {
                JSONObject uo = new JSONObject(true);
                uo.put("queueOffset", u[0]);
                uo.put("physicalOffset", u[1]);
                uo.put("size", u[2]);
                uo.put("tagsCode", u[3]);
                if (u.length > 4) {
                    uo.put("unitQueueOffset", u[4]);  // a batch queue: the unit holding this offset starts here
                    uo.put("batchNum", u[5]);
                }
                units.add(uo);
                JSONObject mo = getMessage(store, q.topic, q.queueId, u[0]);
                msgs.add(mo);
                if (mo.containsKey("storeTimestamp")) {
                    times.add(mo.getLong("storeTimestamp"));
                }
            }
            o.put("cqUnits", units);
            o.put("messages", msgs);
            JSONObject byTime = new JSONObject(true);
            LinkedHashSet<Long> probes = new LinkedHashSet<>();
            probes.add(0L);
            if (!times.isEmpty()) {
                long first = times.get(0);
                long last = times.get(times.size() - 1);
                probes.add(first - 1);
                probes.add(first);
                probes.add(times.get(times.size() / 2));
                probes.add(last);
                probes.add(last + 1);
            }
            probes.add(Long.MAX_VALUE / 2);
            for (long ts : probes) {
                JSONObject a = new JSONObject(true);
                for (String b : Rmq.BOUNDARIES) {
                    a.put(b, byTime(store, q.topic, q.queueId, ts, b));
                }
                byTime.put(Long.toString(ts), a);
            }
            o.put("offsetInQueueByTime", byTime);
            out.put(q.topic + "/" + q.queueId, o);
        }
        return out;
    }

    /** getOffsetInQueueByTime, or the exception RocketMQ throws (damaged queues make its
     *  binary search read outside a file: "exception: ..."). */
    static Object byTime(DefaultMessageStore store, String topic, int queueId, long ts, String boundary) {
        try {
            return Rmq.byTime(store, topic, queueId, ts, boundary);
        } catch (RuntimeException e) {
            return "exception: " + e;
        }
    }

    static JSONObject getMessage(DefaultMessageStore store, String topic, int queueId, long offset) {
        JSONObject o = new JSONObject(true);
        o.put("queueOffset", offset);
        GetMessageResult r;
        try {
            r = store.getMessage("rmqlab-oracle", topic, queueId, offset, 1, null);
        } catch (RuntimeException e) {
            o.put("status", "exception: " + e);
            return o;
        }
        if (r == null) {
            o.put("status", "NULL");
            return o;
        }
        o.put("status", r.getStatus().name());
        try {
            if (r.getMessageBufferList().isEmpty()) {
                return o;
            }
            ByteBuffer bb = r.getMessageBufferList().get(0);
            MessageExt m = MessageDecoder.decode(bb, true, false);
            if (m == null) {
                o.put("decoded", false);
                return o;
            }
            o.put("topic", m.getTopic());
            o.put("queueId", m.getQueueId());
            o.put("getMessageQueueOffset", m.getQueueOffset());
            o.put("physicalOffset", m.getCommitLogOffset());
            o.put("size", m.getStoreSize());
            o.put("tags", m.getTags());
            o.put("keys", m.getKeys());
            o.put("properties", new java.util.TreeMap<>(m.getProperties()));
            byte[] body = m.getBody();
            o.put("bodyBase64", body == null || body.length == 0 ? null : Base64.getEncoder().encodeToString(body));
            o.put("bodyCRC", m.getBodyCRC());
            o.put("bodyCRCRecomputed", body == null ? null : UtilAll.crc32(body));
            o.put("flag", m.getFlag());
            o.put("sysFlag", m.getSysFlag());
            o.put("reconsumeTimes", m.getReconsumeTimes());
            o.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
            o.put("bornTimestamp", m.getBornTimestamp());
            o.put("bornHost", hostString(m.getBornHost()));
            o.put("storeTimestamp", m.getStoreTimestamp());
            o.put("storeHost", hostString(m.getStoreHost()));
            o.put("msgId", m.getMsgId());
        } finally {
            r.release();
        }
        return o;
    }

    /** (topic, index type, key) of every MESSAGE of the walk, in walk order, once each:
     *  its KEYS tokens (MessageConst.INDEX_KEY_TYPE) and its UNIQ_KEY (INDEX_UNIQUE_TYPE). */
    static LinkedHashSet<List<String>> walkKeys(JSONArray walk) {
        LinkedHashSet<List<String>> asked = new LinkedHashSet<>();
        for (int i = 0; i < walk.size(); i++) {
            JSONObject w = walk.getJSONObject(i);
            if (!"MESSAGE".equals(w.getString("kind"))) {
                continue;
            }
            String topic = w.getString("topic");
            String keys = w.getString("keys");
            if (keys != null) {
                for (String k : keys.split(MessageConst.KEY_SEPARATOR)) {
                    if (!k.isEmpty()) {
                        asked.add(List.of(topic, "K", k));
                    }
                }
            }
            if (w.getString("uniqKey") != null) {
                asked.add(List.of(topic, "U", w.getString("uniqKey")));
            }
        }
        return asked;
    }

    /** For every (topic, key) and (topic, UNIQ_KEY) of the walk: the raw index answer
     *  (IndexService.queryOffset: hash matches, newest first) and queryMessage's. */
    static JSONArray indexQueries(DefaultMessageStore store, JSONArray walk) {
        LinkedHashSet<List<String>> asked = new LinkedHashSet<>();
        for (List<String> tk : walkKeys(walk)) {
            asked.add(List.of(tk.get(0), tk.get(2)));
        }
        JSONArray out = new JSONArray();
        int max = store.getMessageStoreConfig().getMaxMsgsNumBatch();
        for (List<String> tk : asked) {
            JSONObject o = new JSONObject(true);
            o.put("topic", tk.get(0));
            o.put("key", tk.get(1));
            QueryOffsetResult raw = Rmq.index(store).queryOffset(tk.get(0), tk.get(1), max, 0, Long.MAX_VALUE);
            o.put("indexPhyOffsets", raw.getPhyOffsets());
            o.put("indexLastUpdateTimestamp", raw.getIndexLastUpdateTimestamp());
            o.put("indexLastUpdatePhyoffset", raw.getIndexLastUpdatePhyoffset());
            QueryMessageResult q = store.queryMessage(tk.get(0), tk.get(1), max, 0, Long.MAX_VALUE);
            JSONArray offs = new JSONArray();
            try {
                for (ByteBuffer bb : q.getMessageBufferList()) {
                    MessageExt m = MessageDecoder.decode(bb, false, false);
                    offs.add(m == null ? null : m.getCommitLogOffset());
                }
            } finally {
                q.release();
            }
            o.put("queryMessagePhyOffsets", offs);
            out.add(o);
        }
        return out;
    }

}
