package streamsql.tests;

import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A Spark plugin that makes the driver JVM never finish exiting, as a native thread that
 * never ends does: its shutdown hook waits forever. Tests use it to check that a run's
 * process still ends, with the run's exit code, within the job's bound.
 */
public class HangAtExit implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new DriverPlugin() {
      @Override
      public Map<String, String> init(SparkContext sc, PluginContext context) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          while (true) {
            try {
              Thread.sleep(60_000);
            } catch (InterruptedException e) {
              // keep hanging, as the native thread would
            }
          }
        }, "hang-at-exit"));
        return Collections.emptyMap();
      }
    };
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null;
  }
}
