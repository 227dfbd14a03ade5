package rmqlab.oracle;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.store.DefaultMessageStore;

/** RocketMQ 5.3's spelling of what 5.4 moved (the rest of the v5 harness is shared). */
final class Api {
    private Api() {
    }

    /** rocksdbCQDoubleWriteEnable: 5.3 asks the store to start the RocksDB copy. */
    static void doubleWrite(DefaultMessageStore s) {
        s.enableRocksdbCQWrite();
    }

    /** ConsumeQueueStoreInterface.getMaxPhyOffsetInConsumeQueue (public in 5.3). */
    static long maxPhyOffsetInConsumeQueue(DefaultMessageStore s) throws Exception {
        return s.getQueueStore().getMaxPhyOffsetInConsumeQueue();
    }

    /** 5.3 keeps no keys, timers or transactions in RocksDB (rocksdbstore/ is 5.4's). */
    static void transStore(DefaultMessageStore s) {
    }

    static void afterStart(DefaultMessageStore s) {
    }

    static void beforeShutdown(DefaultMessageStore s) {
    }

    static void settleMessageRocksDB(DefaultMessageStore s) {
    }

    static JSONObject messageRocksDB(DefaultMessageStore s, JSONArray walk) {
        return null;
    }
}
