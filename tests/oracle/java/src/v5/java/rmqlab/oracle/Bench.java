package rmqlab.oracle;

import com.alibaba.fastjson.JSONObject;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.PutMessageStatus;

/**
 * The engine benchmark's RocketMQ side (bench/bench_engine_vs_rocketmq.py): the same work as
 * rmqlab's run on the same disk, with the clock stopped at the same two points.
 *
 * <p>{@code bench_put}: {@code count} messages of {@code bodySize} bytes to one topic of
 * {@code queues} queues, each with TAGS and a unique KEYS (as bench/bench_write.py builds
 * them), put by {@code producers} threads through {@code DefaultMessageStore.putMessage} (or,
 * with {@code batch > 0}, as producer-encoded {@code MessageExtBatch}es of that many through
 * {@code putMessages}, one queue per batch in turn). Messages are built before the clock
 * starts. {@code putSeconds}: until the last put returned; {@code dispatchedSeconds}: until
 * {@code dispatchBehindBytes()} is 0 as well (ReputMessageService has then built every
 * consume-queue unit and index entry: CommitLogDispatcherBuildConsumeQueue and
 * CommitLogDispatcherBuildIndex run in its dispatch).
 *
 * <p>{@code bench_recover}: {@code load()} and {@code start()} of a store left by a crash
 * (abort file present), until dispatch has caught up: {@code loadSeconds} (recovery:
 * DefaultMessageStore.recover) and {@code readySeconds}.
 */
final class Bench {
    private Bench() {
    }

    static JSONObject put(JSONObject req) throws Exception {
        String dir = req.getString("dir");
        int count = req.getIntValue("count");
        int bodySize = req.getIntValue("bodySize");
        int producers = Math.max(1, req.getIntValue("producers"));
        int queues = Math.max(1, req.getIntValue("queues"));
        int batch = req.getIntValue("batch");
        String topic = req.getString("topic");
        byte[] body = new byte[bodySize];
        for (int i = 0; i < bodySize; i++) {
            body[i] = (byte) ((i * 7) & 0xFF);
        }
        InetSocketAddress born = new InetSocketAddress("127.0.0.1", 50000);
        InetSocketAddress storeHost = new InetSocketAddress("127.0.0.1", 10911);
        DefaultMessageStore store = Oracle.started(dir, req.getJSONObject("config"), null);
        JSONObject ans = new JSONObject(true);
        try {
            List<Object> work = new ArrayList<>();
            if (batch > 0) {
                for (int start = 0, b = 0; start < count; start += batch, b++) {
                    List<Message> msgs = new ArrayList<>();
                    for (int i = start; i < Math.min(count, start + batch); i++) {
                        Message m = new Message();
                        m.setTopic(topic);
                        m.setBody(body);
                        MessageAccessor.setProperties(m, props(i));
                        msgs.add(m);
                    }
                    MessageExtBatch mb = new MessageExtBatch();
                    mb.setTopic(topic);
                    mb.setQueueId(b % queues);
                    mb.setBody(MessageDecoder.encodeMessages(msgs));
                    mb.setBornTimestamp(System.currentTimeMillis());
                    mb.setBornHost(born);
                    mb.setStoreHost(storeHost);
                    Rmq.batchProperties(mb, "");
                    work.add(mb);
                }
            } else {
                for (int i = 0; i < count; i++) {
                    MessageExtBrokerInner m = new MessageExtBrokerInner();
                    m.setTopic(topic);
                    m.setQueueId(i % queues);
                    m.setBody(body);
                    Map<String, String> p = props(i);
                    MessageAccessor.setProperties(m, p);
                    m.setPropertiesString(MessageDecoder.messageProperties2String(p));
                    m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(p.get("TAGS")));
                    m.setBornTimestamp(System.currentTimeMillis());
                    m.setBornHost(born);
                    m.setStoreHost(storeHost);
                    work.add(m);
                }
            }
            System.gc();
            AtomicInteger next = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            Thread[] threads = new Thread[producers];
            long t0 = System.nanoTime();
            for (int t = 0; t < producers; t++) {
                threads[t] = new Thread(() -> {
                    for (int i = next.getAndIncrement(); i < work.size(); i = next.getAndIncrement()) {
                        Object w = work.get(i);
                        PutMessageResult r = w instanceof MessageExtBatch ? store.putMessages((MessageExtBatch) w) : store.putMessage((MessageExtBrokerInner) w);
                        if (r.getPutMessageStatus() != PutMessageStatus.PUT_OK) {
                            failed.incrementAndGet();
                        }
                    }
                });
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            long t1 = System.nanoTime();
            while (store.dispatchBehindBytes() > 0) {
                Thread.onSpinWait();
            }
            long t2 = System.nanoTime();
            ans.put("messages", count);
            ans.put("failed", failed.get());
            ans.put("putSeconds", (t1 - t0) / 1e9);
            ans.put("dispatchedSeconds", (t2 - t0) / 1e9);
            ans.put("maxPhyOffset", store.getMaxPhyOffset());
        } finally {
            store.shutdown();
        }
        return ans;
    }

    static Map<String, String> props(int i) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("TAGS", "Tag" + (i % 5));
        p.put("KEYS", String.format("key-%010d", i));
        return p;
    }

    static JSONObject recover(JSONObject req) throws Exception {
        String dir = req.getString("dir");
        long t0 = System.nanoTime();
        DefaultMessageStore store = Oracle.open(dir, req.getJSONObject("config"), null);
        if (!store.load()) {
            throw new IllegalStateException("load() failed for " + dir);
        }
        long t1 = System.nanoTime();
        store.start();
        while (store.dispatchBehindBytes() > 0) {
            Thread.onSpinWait();
        }
        long t2 = System.nanoTime();
        JSONObject ans = new JSONObject(true);
        ans.put("loadSeconds", (t1 - t0) / 1e9);
        ans.put("readySeconds", (t2 - t0) / 1e9);
        ans.put("maxPhyOffset", store.getMaxPhyOffset());
        store.shutdown();
        return ans;
    }
}
