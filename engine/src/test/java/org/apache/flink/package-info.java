/**
 * Stand-ins for the few classes of Flink's function API the engine reaches by reflection
 * (streamsql.engine.udf), with Flink's names and signatures: Flink itself is not on the
 * engine's class path, and the engine's unit tests need user functions to call. The real
 * API is exercised by the differential tests (tests/flink/), which load Flink's own jars.
 */
package org.apache.flink;
