package org.apache.flink.api.common.functions;

/** Stand-in for Flink's RuntimeContext (see org.apache.flink's package-info). */
public interface RuntimeContext {}
