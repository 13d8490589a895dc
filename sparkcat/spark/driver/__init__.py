"""Code that runs only in the driver's Python process: it starts and watches queries, plans
source streams and talks to the JVM through the session's py4j gateway.
"""
