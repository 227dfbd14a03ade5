package rmqlab.oracle;

import java.lang.reflect.Field;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.store.DefaultMessageStore;

/**
 * {@code DefaultMessageStore.shutdown()} without its three-second pause.
 *
 * <p>Every release's {@code shutdown} stops its scheduled executors and then sleeps three
 * seconds ({@code Thread.sleep(1000 * 3)}) before it stops the services and writes the
 * checkpoint: 5.x awaits the executors' termination first, 4.9 only sleeps. Nothing else
 * is waited for there (the reput service's own shutdown waits for dispatch to finish, the
 * flush services flush on their way out), so here the executors' termination is awaited
 * as 5.x does, in every release, and the pause is then cut short by interrupting it;
 * {@code shutdown} catches the interrupt ({@code "shutdown Exception"}, logged) and goes
 * on with the steps it would have taken after three seconds. The suite runs hundreds of
 * stores through the oracle: the pause was minutes of it.
 */
final class Shutdown {
    private Shutdown() {
    }

    static void quick(DefaultMessageStore store) {
        Thread caller = Thread.currentThread();
        AtomicBoolean done = new AtomicBoolean();
        Thread cut = new Thread(() -> {
            try {
                while (!done.get()) {
                    if (inPause(caller)) {
                        if (awaitExecutors(store) && inPause(caller)) {
                            caller.interrupt();
                        }
                        return;
                    }
                    Thread.sleep(2);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "oracle-shutdown-pause");
        cut.setDaemon(true);
        cut.start();
        try {
            store.shutdown();
        } finally {
            done.set(true);
            try {
                cut.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Thread.interrupted(); // an interrupt that found the pause over: it must not reach the next request
        }
    }

    /** The caller is inside {@code Thread.sleep}, called by {@code DefaultMessageStore.shutdown} itself. */
    private static boolean inPause(Thread t) {
        StackTraceElement[] st = t.getStackTrace();
        boolean sleeping = false;
        for (StackTraceElement e : st) {
            if (Thread.class.getName().equals(e.getClassName())) {
                sleeping |= e.getMethodName().startsWith("sleep");
                continue;
            }
            return sleeping && "shutdown".equals(e.getMethodName()) && DefaultMessageStore.class.getName().equals(e.getClassName());
        }
        return false;
    }

    /** Await every executor the store holds that its shutdown has stopped (5.x's awaitTermination, 3 s each at most); false when one cannot be reached. */
    private static boolean awaitExecutors(DefaultMessageStore store) throws InterruptedException {
        for (Field f : DefaultMessageStore.class.getDeclaredFields()) {
            if (!ExecutorService.class.isAssignableFrom(f.getType())) {
                continue;
            }
            try {
                f.setAccessible(true);
                ExecutorService ex = (ExecutorService) f.get(store);
                if (ex != null && ex.isShutdown()) {
                    ex.awaitTermination(3, TimeUnit.SECONDS);
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                return false; // not reachable: the pause then stays whole for this store
            }
        }
        return true;
    }
}
