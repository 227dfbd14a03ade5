package rmqlab.oracle;

import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.queue.AbstractConsumeQueueStore;

/** RocketMQ 5.4's and 5.5's spelling of what moved after 5.3 (the rest of the v5 harness
 *  is shared). */
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
}
