# The standalone cluster's master and workers the tests start (tests/sparkcluster.py), like the other Spark JVMs
# of the tests (spark-defaults.conf beside this file): the JIT's first tier only.
SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
