"""The writers of each file RocketMQ keeps, below both the engine and recovery.

- :mod:`.mapped_file` — a writable memory-mapped file (Java ``DefaultMappedFile``);
- :mod:`.commitlog_writer`, :mod:`.consume_queue_writer`, :mod:`.index_writer`,
  :mod:`.checkpoint_writer`, :mod:`.metadata` (``config/*.json``) — one file kind each;
- :mod:`.rocksdb_consume_queue_writer`, :mod:`.message_rocksdb_writer` — what RocketMQ
  writes into RocksDB at start-up: its consume queues or their copy (``truncateDirty``,
  re-dispatched units), 5.4+'s keys and transactions;
- :mod:`.dispatch` — the reput: from records (read by :mod:`rmqlab.scan.dispatch_request`)
  to consume-queue and index entries; the engine's puts and recovery's re-dispatch
  both go through it;
- :mod:`.clock` — the wall clock the writers stamp with (a manual one for tests).

The engine (:mod:`rmqlab.engine`) runs them as a store; recovery
(:mod:`rmqlab.recovery`) applies its plan with them.
"""
