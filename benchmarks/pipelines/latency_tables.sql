-- The latency benchmark's input: the seed tables as upsert-kafka topics fed at a fixed rate by
-- benchmarks/kafka/KafkaTool.java (rate mode). Each value carries ts: the time the producer
-- made it, in microseconds since the epoch, unique per record (benchmarks/latency_engines.py).
CREATE TABLE users (
  uid STRING, accountId STRING, score INT, ts BIGINT,
  PRIMARY KEY (uid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ prefix }}users', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json');
CREATE TABLE user_favorite_color (
  userUid STRING, favoriteColor STRING, ts BIGINT,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ prefix }}colors', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json');
CREATE TABLE user_favorite_cheese (
  userUid STRING, favoriteCheese STRING, ts BIGINT,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ prefix }}cheeses', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json');
