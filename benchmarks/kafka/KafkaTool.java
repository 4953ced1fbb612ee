import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The benchmarks' Kafka client (the broker's own kafka-clients jar, no Python client needed).
 * Compiled once by benchmarks/kafka_tool.py; every mode prints one JSON summary line on stdout.
 *
 *   create BOOTSTRAP TOPIC PARTITIONS [CONFIG=VALUE ...]   create a topic (no error if it exists)
 *   load   BOOTSTRAP TOPIC                                 stdin "key\tvalue" lines ("\N" value: tombstone)
 *   load-debezium BOOTSTRAP TOPIC KEY FILE...              Debezium JSON lines as upsert records: key = the
 *                                                          row's KEY field, value = "after" (a delete: tombstone)
 *   rate   BOOTSTRAP PREFIX TABLES RATE SECONDS KEYS SEED [EVENTS]  upsert records at a fixed rate, "ts" = produce time;
 *          EVENTS: a file that gets one line per record, in produce order: "table\tkey\tts\taccountId" (accountId
 *          of a users record, "-" for a tombstone, empty otherwise)
 *   dump   BOOTSTRAP TOPIC                                 every record up to the current end, as
 *                                                          "partition\toffset\ttimestamp\tkey\tvalue" on stderr-free stdout
 *   ends   BOOTSTRAP TOPIC                                 the summed end offsets
 */
public class KafkaTool {
    static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String linger, String batch) {
        Properties p = common(bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", linger);
        p.put("batch.size", batch);
        p.put("acks", "1");
        p.put("compression.type", "none");
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties p = common(bootstrap);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "5000");
        return new KafkaConsumer<>(p);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "create": create(args); break;
            case "load": load(args[1], args[2]); break;
            case "load-debezium": loadDebezium(args); break;
            case "rate": rate(args); break;
            case "dump": dump(args[1], args[2]); break;
            case "ends": System.out.println("{\"records\": " + ends(args[1], args[2]) + "}"); break;
            default: throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void create(String[] a) throws Exception {
        Map<String, String> configs = new HashMap<>();
        for (int i = 4; i < a.length; i++) {
            String[] kv = a[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        try (Admin admin = Admin.create(common(a[1]))) {
            NewTopic topic = new NewTopic(a[2], Integer.parseInt(a[3]), (short) 1).configs(configs);
            try {
                admin.createTopics(List.of(topic)).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
        }
        System.out.println("{\"created\": \"" + a[2] + "\"}");
    }

    static void load(String bootstrap, String topic) throws Exception {
        long n = 0;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        try (KafkaProducer<String, String> p = producer(bootstrap, "20", "262144")) {
            String line;
            while ((line = in.readLine()) != null) {
                int tab = line.indexOf('\t');
                String key = line.substring(0, tab), value = line.substring(tab + 1);
                p.send(new ProducerRecord<>(topic, key, value.equals("\\N") ? null : value));
                n++;
            }
            p.flush();
        }
        System.out.println("{\"topic\": \"" + topic + "\", \"records\": " + n + "}");
    }

    static void loadDebezium(String[] a) throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        String topic = a[2], keyField = a[3];
        long n = 0;
        try (KafkaProducer<String, String> p = producer(a[1], "20", "262144")) {
            for (int i = 4; i < a.length; i++) {
                try (BufferedReader in = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(a[i]))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (line.isBlank()) continue;
                        com.fasterxml.jackson.databind.JsonNode ev = json.readTree(line);
                        com.fasterxml.jackson.databind.JsonNode after = ev.get("after");
                        boolean delete = after == null || after.isNull();
                        com.fasterxml.jackson.databind.JsonNode row = delete ? ev.get("before") : after;
                        p.send(new ProducerRecord<>(topic, row.get(keyField).asText(), delete ? null : json.writeValueAsString(after)));
                        n++;
                    }
                }
            }
            p.flush();
        }
        System.out.println("{\"topic\": \"" + topic + "\", \"records\": " + n + "}");
    }

    static final String[] COLORS = {"red", "blue", "green", "yellow", "black", "white"};
    static final String[] CHEESES = {"brie", "cheddar", "gouda", "comte", "feta", "stilton"};

    /** Upsert records for TABLES (comma-separated of users,colors,cheeses; users twice as often as
     *  each of the others, as benchmarks/generate.py) at RATE records/s in all for SECONDS. Each
     *  value carries "ts": the time the record was handed to the producer, in microseconds since
     *  the epoch, made unique (a counter within the millisecond), so a sink record that carries it
     *  names the event it reflects. 10% of the records are tombstones. */
    static void rate(String[] a) throws Exception {
        String bootstrap = a[1], prefix = a[2];
        String[] tables = a[3].split(",");
        int rate = Integer.parseInt(a[4]);
        double seconds = Double.parseDouble(a[5]);
        int keys = Integer.parseInt(a[6]);
        Random rng = new Random(Long.parseLong(a[7]));
        List<String> weighted = new ArrayList<>();
        for (String t : tables) {
            weighted.add(t);
            if (t.equals("users")) weighted.add(t);
        }
        long total = (long) (rate * seconds);
        long start = System.nanoTime(), startMs = System.currentTimeMillis();
        long lastMs = -1, inMs = 0, maxBehindNs = 0, tombstones = 0;
        Map<String, Long> perTable = new HashMap<>();
        // Every event, tombstones included, so the latency benchmark can credit each one
        // (benchmarks/latency_credit.py): a tombstone carries no ts of its own.
        java.io.Writer events = a.length > 8
                ? new java.io.BufferedWriter(new java.io.FileWriter(a[8]), 1 << 16) : java.io.Writer.nullWriter();
        try (KafkaProducer<String, String> p = producer(bootstrap, "1", "65536"); events) {
            for (long i = 0; i < total; i++) {
                long due = start + (long) (i * 1e9 / rate);
                long now = System.nanoTime();
                if (due > now) {
                    long wait = due - now;
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                } else {
                    maxBehindNs = Math.max(maxBehindNs, now - due);
                }
                String table = weighted.get(rng.nextInt(weighted.size()));
                String key = "u" + rng.nextInt(keys);
                long ms = System.currentTimeMillis();
                if (ms != lastMs) {
                    lastMs = ms;
                    inMs = 0;
                }
                if (inMs >= 999) {  // keep ts unique: at most 1000 records a millisecond
                    while (System.currentTimeMillis() == ms) Thread.onSpinWait();
                    ms = lastMs = System.currentTimeMillis();
                    inMs = 0;
                }
                long ts = ms * 1000 + inMs++;
                String value, account = "";
                if (rng.nextInt(10) == 0) {
                    value = null;
                    account = "-";
                    tombstones++;
                } else if (table.equals("users")) {
                    account = "a" + rng.nextInt(Math.max(1, keys / 10));
                    value = "{\"uid\":\"" + key + "\",\"accountId\":\"" + account
                            + "\",\"score\":" + rng.nextInt(1000) + ",\"ts\":" + ts + "}";
                } else if (table.equals("colors")) {
                    value = "{\"userUid\":\"" + key + "\",\"favoriteColor\":\"" + COLORS[rng.nextInt(6)] + "\",\"ts\":" + ts + "}";
                } else {
                    value = "{\"userUid\":\"" + key + "\",\"favoriteCheese\":\"" + CHEESES[rng.nextInt(6)] + "\",\"ts\":" + ts + "}";
                }
                p.send(new ProducerRecord<>(prefix + table, key, value));
                events.write(table + "\t" + key + "\t" + ts + "\t" + account + "\n");
                perTable.merge(table, 1L, Long::sum);
            }
            p.flush();
        }
        double took = (System.nanoTime() - start) / 1e9;
        StringBuilder out = new StringBuilder("{\"records\": " + total + ", \"tombstones\": " + tombstones
                + ", \"seconds\": " + took + ", \"started_ms\": " + startMs + ", \"ended_ms\": " + System.currentTimeMillis()
                + ", \"max_behind_ms\": " + maxBehindNs / 1e6 + ", \"per_table\": {");
        int i = 0;
        for (Map.Entry<String, Long> e : perTable.entrySet()) {
            out.append(i++ > 0 ? ", " : "").append("\"").append(e.getKey()).append("\": ").append(e.getValue());
        }
        System.out.println(out.append("}}"));
    }

    static long ends(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            List<TopicPartition> parts = new ArrayList<>();
            c.partitionsFor(topic, Duration.ofSeconds(30)).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
            long n = 0;
            for (long v : c.endOffsets(parts).values()) n += v;
            return n;
        }
    }

    static void dump(String bootstrap, String topic) throws Exception {
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 20);
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            List<TopicPartition> parts = new ArrayList<>();
            c.partitionsFor(topic, Duration.ofSeconds(30)).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            Map<TopicPartition, Long> left = new HashMap<>();
            for (TopicPartition tp : parts) if (end.get(tp) > 0) left.put(tp, end.get(tp));
            while (!left.isEmpty()) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    Long stop = left.get(tp);
                    if (stop == null || r.offset() >= stop) continue;
                    out.write(r.partition() + "\t" + r.offset() + "\t" + r.timestamp() + "\t"
                            + (r.key() == null ? "\\N" : r.key()) + "\t" + (r.value() == null ? "\\N" : r.value()) + "\n");
                    if (r.offset() + 1 >= stop) left.remove(tp);
                }
            }
        }
        out.flush();
    }
}
