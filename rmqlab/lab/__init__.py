"""Tools that drive the engine to make stores: deterministic crashes
(:mod:`.crashlab`), the lessons' sample stores (:mod:`.samples`) and big realistic
stores for benchmarks and Spark (:mod:`.generate`).  They sit above the engine and
recovery; nothing below imports them."""
