package org.apache.flink.types;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** Stand-in for Flink's Row, by position or by name (see org.apache.flink's package-info). */
public final class Row {
  private final Object[] byPosition;
  private final Map<String, Object> byName;

  private Row(Object[] byPosition, Map<String, Object> byName) {
    this.byPosition = byPosition;
    this.byName = byName;
  }

  public static Row of(Object... values) {
    return new Row(values, null);
  }

  public static Row withNames() {
    return new Row(null, new LinkedHashMap<>());
  }

  public int getArity() {
    return byPosition != null ? byPosition.length : byName.size();
  }

  public Object getField(int pos) {
    if (byPosition == null) {
      throw new IllegalArgumentException("Accessing a field by position is not supported in name-based field mode.");
    }
    return byPosition[pos];
  }

  public Object getField(String name) {
    return byName.get(name);
  }

  public void setField(String name, Object value) {
    byName.put(name, value);
  }

  public Set<String> getFieldNames(boolean includeNamedPositions) {
    return byName == null ? null : byName.keySet();
  }
}
