-- color_and_cheese.sql carrying each side's produce time to its sink record.
CREATE TABLE user_favorite_color_and_cheese (
  accountId STRING, userUid STRING, favoriteColor STRING, favoriteCheese STRING,
  user_ts BIGINT, color_ts BIGINT, cheese_ts BIGINT,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '{{ bootstrap }}', 'key.format' = 'raw',
        'value.format' = 'json', 'topic' = '{{ prefix }}sink');
INSERT INTO user_favorite_color_and_cheese
SELECT u.accountId, u.uid, c.favoriteColor, ch.favoriteCheese, u.ts, c.ts, ch.ts
FROM users u
LEFT JOIN user_favorite_color c ON u.uid = c.userUid
LEFT JOIN user_favorite_cheese ch ON u.uid = ch.userUid;
