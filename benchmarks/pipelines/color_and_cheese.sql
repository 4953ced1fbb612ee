CREATE TABLE user_favorite_color_and_cheese (
  accountId STRING, userUid STRING, favoriteColor STRING, favoriteCheese STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH ({{ sink_options }}{% if sink_topics %}, 'topic' = '{{ topic_prefix }}color_and_cheese'{% endif %});
INSERT INTO user_favorite_color_and_cheese
SELECT u.accountId, u.uid, c.favoriteColor, ch.favoriteCheese
FROM users u
LEFT JOIN user_favorite_color c ON u.uid = c.userUid
LEFT JOIN user_favorite_cheese ch ON u.uid = ch.userUid;
