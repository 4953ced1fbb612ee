-- The second pipeline of the original Flink experiment: every user with their favourite colour and cheese, kept up to
-- date as any of the three tables changes. Missing preferences are NULL.
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

CREATE TABLE user_favorite_color (
  userUid STRING,
  favoriteColor STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{{ color_topic | default("user_favorite_color") }}',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = '{{ bootstrap | default("127.0.0.1:9092") }}'
);

CREATE TABLE user_favorite_cheese (
  userUid STRING,
  favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{{ cheese_topic | default("user_favorite_cheese") }}',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = '{{ bootstrap | default("127.0.0.1:9092") }}'
);

CREATE TABLE user_favorite_color_and_cheese (
  accountId STRING,
  userUid STRING,
  favoriteColor STRING,
  favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{{ output_topic | default("user_favorite_color_and_cheese") }}',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = '{{ bootstrap | default("127.0.0.1:9092") }}'
);

INSERT INTO user_favorite_color_and_cheese (accountId, userUid, favoriteColor, favoriteCheese)
SELECT
  u.accountId,
  u.uid,
  ufcol.favoriteColor,
  ufchz.favoriteCheese
FROM users u
LEFT JOIN user_favorite_color ufcol
  ON u.uid = ufcol.userUid
LEFT JOIN user_favorite_cheese ufchz
  ON u.uid = ufchz.userUid;
