package org.apache.flink.table.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** Stand-in for Flink's FunctionHint, part of its elements (see org.apache.flink's package-info). */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface FunctionHint {
  DataTypeHint[] input() default @DataTypeHint();

  boolean isVarArgs() default false;

  String[] argumentNames() default {""};

  DataTypeHint accumulator() default @DataTypeHint();

  DataTypeHint output() default @DataTypeHint();
}
