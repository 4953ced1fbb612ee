"""What tests share: the one SparkSession (spark_session), the local Kafka broker and
PostgreSQL server (services), Kafka topics to write and read (kafka_io), and running a
pipeline in-process or as the command line does (runs)."""
