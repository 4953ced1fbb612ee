-- The benchmark's three changelog tables, read from Debezium JSON files.
CREATE TABLE users (
  uid STRING, accountId STRING, score INT,
  PRIMARY KEY (uid) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '{{ data }}/users', 'format' = 'debezium-json');
CREATE TABLE user_favorite_color (
  userUid STRING, favoriteColor STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '{{ data }}/colors', 'format' = 'debezium-json');
CREATE TABLE user_favorite_cheese (
  userUid STRING, favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = '{{ data }}/cheeses', 'format' = 'debezium-json');
