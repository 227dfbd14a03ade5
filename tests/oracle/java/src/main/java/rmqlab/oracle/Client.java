package rmqlab.oracle;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * What a real application does to a broker, through RocketMQ's Java client: messages
 * with tags and keys, delay levels, timer messages (one that fires before the crash,
 * others pending), a batch, transactions (committed and rolled back), and two consumer
 * groups, one that reads everything of the main topic and one that stops half way.
 * Prints one JSON object: what was sent and consumed.
 *
 * <p>Arguments: name server address, number of plain messages.
 */
public final class Client {
    static final String TOPIC = "CaptureA";
    static final String BATCH_TOPIC = "CaptureB";
    static final String TIMER_TOPIC = "CaptureTimer";

    private Client() {
    }

    static JSONObject sent(SendResult r, String kind, String keys) {
        JSONObject o = new JSONObject(true);
        o.put("kind", kind);
        o.put("status", r.getSendStatus().name());
        o.put("msgId", r.getMsgId());
        o.put("offsetMsgId", r.getOffsetMsgId());
        o.put("topic", r.getMessageQueue().getTopic());
        o.put("queueId", r.getMessageQueue().getQueueId());
        o.put("queueOffset", r.getQueueOffset());
        o.put("keys", keys);
        return o;
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        System.setOut(System.err);
        try {
            run(args, out);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1); // the client's own threads would keep a failed run alive
        }
    }

    static void run(String[] args, PrintStream out) throws Exception {
        String namesrv = args[0];
        int n = Integer.parseInt(args[1]);
        JSONObject ans = new JSONObject(true);
        JSONArray sends = new JSONArray();

        DefaultMQProducer producer = new DefaultMQProducer("capture-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setClientIP("127.0.0.1");
        producer.setSendMsgTimeout(15000);
        producer.start();
        awaitRoute(producer);
        for (int i = 0; i < n; i++) {
            String keys = "order-" + i + (i % 7 == 0 ? " shared" : "");
            Message m = new Message(TOPIC, i % 3 == 0 ? "TagA" : "TagB", keys, ("body-" + i).getBytes(StandardCharsets.UTF_8));
            m.putUserProperty("seq", Integer.toString(i));
            if (i % 25 == 5) {
                m.setDelayTimeLevel(2); // 5 s: fires before the crash
            }
            sends.add(sent(producer.send(m), i % 25 == 5 ? "delay" : "plain", keys));
        }
        // timer messages (5.x timer wheel; a 4.9 client has none): one due in 2 s, the others in an hour
        for (int i = 0; i < 6; i++) {
            Message m = new Message(TIMER_TOPIC, "TagT", "timer-" + i, ("timer-" + i).getBytes(StandardCharsets.UTF_8));
            if (!Rmq.setTimer(m, i == 0 ? 2000 : 3_600_000L + i * 1000L)) {
                break;
            }
            sends.add(sent(producer.send(m), i == 0 ? "timer-fires" : "timer-pending", "timer-" + i));
        }
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            batch.add(new Message(BATCH_TOPIC, "TagBatch", "batch-" + i, ("batch-" + i).getBytes(StandardCharsets.UTF_8)));
        }
        sends.add(sent(producer.send(batch), "batch", "batch-*"));
        producer.shutdown();

        TransactionMQProducer tx = new TransactionMQProducer("capture-tx");
        tx.setNamesrvAddr(namesrv);
        tx.setClientIP("127.0.0.1");
        tx.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return ((Integer) arg) % 2 == 0 ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        tx.start();
        for (int i = 0; i < 6; i++) {
            Message m = new Message(TOPIC, "TagTx", "tx-" + i, ("tx-" + i).getBytes(StandardCharsets.UTF_8));
            TransactionSendResult r = tx.sendMessageInTransaction(m, i);
            JSONObject o = sent(r, i % 2 == 0 ? "tx-commit" : "tx-rollback", "tx-" + i);
            o.put("localTransactionState", r.getLocalTransactionState().name());
            sends.add(o);
        }
        tx.shutdown();
        ans.put("sent", sends);

        // wait for the delayed and the short timer message to be delivered to their topics
        Thread.sleep(8000);

        int plainAndTx = n + 3; // committed transactions reach the topic, rolled back ones do not
        ans.put("consumed", consume("capture-all", plainAndTx, namesrv));
        ans.put("consumedHalf", consume("capture-half", n / 2, namesrv));
        out.println(JSON.toJSONString(ans));
        out.flush();
        System.exit(0);
    }

    /**
     * "boot success" is printed before the broker's first registration with the name
     * server has landed (BrokerController.start registers asynchronously); on a loaded
     * machine the first send then fails with "No route info".  Wait until the name
     * server can route the auto-create topic (TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC)
     * every new topic of this client falls back to.
     */
    static void awaitRoute(DefaultMQProducer producer) throws Exception {
        // the broker re-registers every registerNameServerPeriod (30 s) if the first one failed
        long deadline = System.currentTimeMillis() + 90_000;
        while (true) {
            try {
                if (!producer.fetchPublishMessageQueues("TBW102").isEmpty()) {
                    return;
                }
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the name server has no route for TBW102 after 90 s");
            }
            Thread.sleep(200);
        }
    }

    /** A consumer group that reads {@code want} messages of TOPIC and commits them. */
    static JSONObject consume(String group, int want, String namesrv) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setClientIP("127.0.0.1");
        c.setAutoCommit(false);
        c.setPullBatchSize(8);
        c.subscribe(TOPIC, "*");
        c.start();
        Set<String> seen = new HashSet<>();
        long deadline = System.currentTimeMillis() + 60_000;
        while (seen.size() < want && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c.poll(1000)) {
                seen.add(m.getMsgId());
            }
        }
        c.commitSync();
        c.shutdown(); // persists the group's offsets to the broker
        JSONObject o = new JSONObject(true);
        o.put("group", group);
        o.put("messages", seen.size());
        return o;
    }
}
