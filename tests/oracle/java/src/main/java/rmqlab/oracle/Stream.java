package rmqlab.oracle;

import com.alibaba.fastjson.JSONObject;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * A steady stream of messages through RocketMQ's Java client, for following a store
 * while a broker writes it: message {@code seq} 0..n-1, one every {@code pauseMs}, each
 * sent until the broker acknowledges it (a send that fails — the broker killed and not
 * yet restarted — is tried again after a second). Prints one JSON line per
 * acknowledgement, flushed: seq, offsetMsgId, queue, and the time it was acknowledged.
 *
 * <p>Arguments: name server address, topic, number of messages, pause in ms, body bytes.
 */
public final class Stream {
    private Stream() {
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        System.setOut(System.err);
        try {
            run(args, out);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String[] args, PrintStream out) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        long pause = Long.parseLong(args[3]);
        int bodySize = Integer.parseInt(args[4]);
        DefaultMQProducer producer = new DefaultMQProducer("stream-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setClientIP("127.0.0.1");
        producer.setSendMsgTimeout(5000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        Client.awaitRoute(producer);
        StringBuilder pad = new StringBuilder();
        while (pad.length() < bodySize) {
            pad.append('x');
        }
        for (int i = 0; i < n; i++) {
            Message m = new Message(topic, "TagS", "seq-" + i, ("stream-" + i + "-" + pad).getBytes(StandardCharsets.UTF_8));
            m.putUserProperty("seq", Integer.toString(i));
            long sentAt = System.currentTimeMillis();
            while (true) {
                try {
                    SendResult r = producer.send(m);
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        JSONObject o = new JSONObject(true);
                        o.put("seq", i);
                        o.put("offsetMsgId", r.getOffsetMsgId());
                        o.put("queueId", r.getMessageQueue().getQueueId());
                        o.put("sentAt", sentAt);
                        o.put("ackAt", System.currentTimeMillis());
                        out.println(o.toJSONString());
                        out.flush();
                        break;
                    }
                } catch (Exception e) {
                    // the broker is down: try again once it is back
                }
                Thread.sleep(1000);
            }
            if (pause > 0) {
                Thread.sleep(pause);
            }
        }
        producer.shutdown();
    }
}
