-- The benchmark's three tables as upsert-kafka topics (loaded by benchmarks/throughput.py).
-- kafka_bounded: ", 'scan.bounded.mode' = 'latest-offset'" (both engines end at the offsets they start with).
CREATE TABLE users (
  uid STRING, accountId STRING, score INT,
  PRIMARY KEY (uid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ users_topic }}', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json'{{ kafka_bounded }});
CREATE TABLE user_favorite_color (
  userUid STRING, favoriteColor STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ colors_topic }}', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json'{{ kafka_bounded }});
CREATE TABLE user_favorite_cheese (
  userUid STRING, favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{{ cheeses_topic }}', 'properties.bootstrap.servers' = '{{ bootstrap }}',
        'key.format' = 'raw', 'value.format' = 'json'{{ kafka_bounded }});
