"""Verify a captured store with Spark and keep the findings as Parquet.

    spark-submit --master spark://HOST:7077 examples/spark_verify.py /shared/captures/broker-a/store /shared/reports/broker-a

(on a cluster, ship rmqlab as docs/howto/spark.md, "On a cluster", says).  Prints the findings
per kind and severity, writes them all to OUT as Parquet, and exits 1 when there is
an error, as ``rmqlab verify`` does.
"""

import sys

from pyspark.sql import SparkSession

import rmqlab.spark
from rmqlab.spark.session import WORKER_SETTINGS


def main(store: str, out: str) -> int:
    # the workers as local_spark runs them (each Python task costs Spark far less: WORKER_SETTINGS)
    spark = SparkSession.builder.appName("rmqlab-verify").config(map=WORKER_SETTINGS).getOrCreate()
    findings = rmqlab.spark.verify(spark, store)
    findings.write.mode("overwrite").parquet(out)
    findings.groupBy("severity", "kind").count().orderBy("severity", "kind").show(100, truncate=False)
    errors = findings.where("severity = 'error'").count()
    spark.stop()
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
