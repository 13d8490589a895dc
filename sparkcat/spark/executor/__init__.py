"""Code that runs in Spark's Python workers on executors: pickled there, so picklable and light,
and never needing the driver's SparkSession or py4j gateway (``sparkcat.spark.driver``).
"""
