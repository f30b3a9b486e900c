// `make lint` (part of `make test`): scalafmt keeps Scala sources within 100 columns.
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
