"""A driver program, as a user submits one: reads stores through the rmqlab sources on
the Spark it is pointed at and writes every DataFrame as Parquet for the test to check.

    python read_sources.py --master spark://HOST:PORT --out DIR --store NAME=PATH [--split 64KiB] [--opt KEY=VALUE]
    spark-submit --master ... read_sources.py ...        (the master then comes from spark-submit)
    python read_sources.py --remote sc://HOST:PORT ...   (Spark Connect)

It also writes ``job.json``: where the executors imported rmqlab from, and
``count()`` of each CommitLog DataFrame (a job of its own, without columns).
"""

from __future__ import annotations

import argparse
import json
import os


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--master")
    p.add_argument("--remote")
    p.add_argument("--out", required=True)
    p.add_argument("--store", action="append", default=[], help="NAME=PATH")
    p.add_argument("--split", action="append", default=[])
    p.add_argument("--opt", action="append", default=[], help="a source option KEY=VALUE")
    p.add_argument("--verify", action="append", default=[], help="NAME=PATH: also run rmqlab.spark.verify on it")
    a = p.parse_args()

    from pyspark.sql import SparkSession, functions as F, types as T

    builder = SparkSession.builder.appName("rmqlab-job")
    if a.remote:
        spark = builder.remote(a.remote).getOrCreate()
    else:
        if a.master:
            builder = builder.master(a.master)
        spark = (builder.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
                 .config("spark.executor.cores", "1").config("spark.executor.memory", "1g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    import rmqlab.spark
    from rmqlab.spark.daemon import worker_collection

    rmqlab.spark.register(spark)
    opts = dict(o.split("=", 1) for o in a.opt)
    counts = {}
    for item in a.store:
        name, path = item.split("=", 1)
        for split in a.split or ["128MiB"]:
            df = spark.read.format("rocketmq").options(mode="lenient", splitSize=split, **opts).load(path)
            df.write.mode("overwrite").parquet(os.path.join(a.out, name, f"rocketmq-{split}"))
            counts[f"{name}/rocketmq-{split}"] = df.count()
        for fmt, extra in (("rocketmq.consumequeue", {}), ("rocketmq.index", {"splitEntries": "100"})):
            df = spark.read.format(fmt).options(**extra, **opts).load(path)
            df.write.mode("overwrite").parquet(os.path.join(a.out, name, fmt))
    for item in a.verify:
        name, path = item.split("=", 1)
        findings = rmqlab.spark.verify(spark, path)
        findings.write.mode("overwrite").parquet(os.path.join(a.out, name, "verify"))

    where = F.udf(lambda _: __import__("rmqlab").__file__, T.StringType())
    executors = sorted({r[0] for r in spark.range(0, 8, 1, 4).select(where("id")).collect()})
    # which collection the executors' worker daemon runs after a task (rmqlab.spark.daemon's
    # when the job is given rmqlab.spark.session.WORKER_SETTINGS)
    daemon_gc = F.udf(lambda _: worker_collection(), T.StringType())
    collections = sorted({r[0] for r in spark.range(0, 8, 1, 4).select(daemon_gc("id")).collect()})
    with open(os.path.join(a.out, "job.json"), "w") as fh:
        json.dump({"rmqlab_on_executors": executors, "rmqlab_on_driver": rmqlab.__file__, "counts": counts, "daemon_gc": collections}, fh)
    spark.stop()


if __name__ == "__main__":
    main()
