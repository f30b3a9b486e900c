package io.skewagg

import java.util.{Collections, WeakHashMap}

import org.apache.spark.sql.SparkSessionExtensions

/**
 * `spark.sql.extensions` may name skewagg twice (a cluster default plus a job's own setting, say);
 * Spark then applies it twice to the same [[SparkSessionExtensions]], which would inject every
 * rule twice. skewagg registers its rules only the first time.
 */
object RegisterOnce {
  // Weak keys: a session's extensions are forgotten with the session.
  private val registered = Collections.synchronizedMap(
    new WeakHashMap[SparkSessionExtensions, java.lang.Boolean]())

  /** True the first time it is called with `extensions`, false afterwards. */
  def firstTime(extensions: SparkSessionExtensions): Boolean =
    registered.put(extensions, java.lang.Boolean.TRUE) == null
}
