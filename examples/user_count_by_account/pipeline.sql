-- The first pipeline of the original Flink experiment: the number of users per account, kept up to date as users
-- are created, change account, or are deleted.
CREATE TABLE users (
  uid STRING,
  accountId STRING,
  id INT,
  fullName STRING,
  op STRING,
  eventTime TIMESTAMP(3) METADATA,
  properties MAP<STRING, STRING> METADATA ,
  topic STRING METADATA VIRTUAL,
  sequenceId BIGINT METADATA VIRTUAL,
  PRIMARY KEY (uid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{{ users_topic | default("users") }}',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = '{{ bootstrap | default("127.0.0.1:9092") }}'
);

CREATE TABLE user_count_by_account (
  accountId STRING,
  userCount BIGINT,
  PRIMARY KEY (accountId) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{{ counts_topic | default("user_count_by_account") }}',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = '{{ bootstrap | default("127.0.0.1:9092") }}'
);

INSERT INTO user_count_by_account (accountId, userCount)
SELECT accountId, COUNT(1) AS userCount
FROM users
GROUP BY accountId;
