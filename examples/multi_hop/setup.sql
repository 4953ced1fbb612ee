-- The source table of examples/multi_hop/pipeline.yaml, with a few users.
-- Column names are quoted so that they keep the case the pipeline declares.
CREATE TABLE IF NOT EXISTS users (
  uid        text PRIMARY KEY,
  "accountId" text NOT NULL,
  "fullName"  text
);
INSERT INTO users VALUES ('u1', '100', 'Ada'), ('u2', '100', 'Bob'), ('u3', '101', 'Cy')
ON CONFLICT (uid) DO NOTHING;
