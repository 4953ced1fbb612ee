-- count_by_account.sql carrying the newest event's produce time (MAX(ts)) to its sink record.
CREATE TABLE user_count_by_account (
  accountId STRING, userCount BIGINT, ts BIGINT, PRIMARY KEY (accountId) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '{{ bootstrap }}', 'key.format' = 'raw',
        'value.format' = 'json', 'topic' = '{{ prefix }}sink');
INSERT INTO user_count_by_account SELECT accountId, COUNT(1), MAX(ts) FROM users GROUP BY accountId;
