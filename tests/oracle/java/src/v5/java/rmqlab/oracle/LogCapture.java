package rmqlab.oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.logging.ch.qos.logback.classic.spi.ILoggingEvent;
import org.apache.rocketmq.logging.ch.qos.logback.core.AppenderBase;

/**
 * Collects RocketMQ's log lines per thread, in the form the reference stores' dump.json
 * records them: {@code [LEVEL] LoggerName - message}. Only threads that asked are
 * collected ({@link #begin()}), so the lines of concurrent requests do not mix.
 */
public class LogCapture extends AppenderBase<ILoggingEvent> {
    private static final ConcurrentHashMap<String, List<String>> LINES = new ConcurrentHashMap<>();

    /** Start collecting this thread's lines. */
    public static void begin() {
        LINES.put(Thread.currentThread().getName(), new ArrayList<>());
    }

    /** The lines this thread logged since {@link #begin()}; collection goes on. */
    public static List<String> take() {
        List<String> mine = LINES.get(Thread.currentThread().getName());
        if (mine == null) {
            return new ArrayList<>();
        }
        synchronized (mine) {
            List<String> out = new ArrayList<>(mine);
            mine.clear();
            return out;
        }
    }

    public static void end() {
        LINES.remove(Thread.currentThread().getName());
    }

    @Override
    protected void append(ILoggingEvent e) {
        List<String> mine = LINES.get(e.getThreadName());
        if (mine == null) {
            return;
        }
        synchronized (mine) {
            mine.add("[" + e.getLevel() + "] " + e.getLoggerName() + " - " + e.getFormattedMessage());
        }
    }
}
