package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static streamsql.engine.Harness.r;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.LookupJoin;

/** The lookup join (stateless): each row joined with the table's rows for its key, queried in chunks. */
class LookupJoinTest {
  static final String URL = "jdbc:derby:memory:lookup;create=true";
  static final StructType INPUT = Harness.schema("order_id INT, customer INT, __lk0 INT");
  static final String TYPES = Harness.schema("c0 INT, c1 STRING").json();

  @BeforeAll
  static void table() throws SQLException {
    try (Connection c = DriverManager.getConnection(URL); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE customers (id INT, name VARCHAR(20))");
      s.execute("INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (2, 'bea')");
    }
  }

  static List<Row> run(boolean leftOuter, Row... rows) {
    LookupJoin spec = new LookupJoin(URL, null, List.of(), "customers", List.of("id", "name"), TYPES, List.of(0),
        List.of("__lk0"), List.of("order_id", "customer"), leftOuter, 2);
    Iterator<Row> out = Engine.lookupJoinOp(spec, INPUT).apply(List.of(rows).iterator());
    List<Row> joined = new ArrayList<>();
    out.forEachRemaining(joined::add);
    return joined;
  }

  @Test
  void eachRowGetsEveryMatchAndAnInnerJoinDropsTheRest() {
    assertEquals(List.of(r(10, 1, 1, "ann"), r(11, 2, 2, "bob"), r(11, 2, 2, "bea")),
        run(false, r(10, 1, 1), r(11, 2, 2), r(12, 3, 3), r(13, null, null)));
  }

  @Test
  void aLeftJoinPadsARowWithoutMatchOrWithANullKey() {
    assertEquals(List.of(r(12, 3, null, null), r(13, null, null, null), r(10, 1, 1, "ann")),
        run(true, r(12, 3, 3), r(13, null, null), r(10, 1, 1)));
  }
}
