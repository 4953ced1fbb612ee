CREATE TABLE user_count_by_account (
  accountId STRING, userCount BIGINT, PRIMARY KEY (accountId) NOT ENFORCED
) WITH ({{ sink_options }}{% if sink_topics %}, 'topic' = '{{ topic_prefix }}counts'{% endif %});
INSERT INTO user_count_by_account SELECT accountId, COUNT(1) FROM users GROUP BY accountId;
