/*
 * sarif.h - review findings as a SARIF 2.1.0 log (OASIS Static Analysis
 * Results Interchange Format), the format code-scanning UIs read.
 *
 * One run, tool.driver "forge-review" with one reportingDescriptor per rule
 * id (shortDescription, defaultConfiguration.level, properties.tags
 * [category, layer], properties.precision from the confidence, and
 * properties."security-severity" for security findings); one result per
 * finding with ruleId/ruleIndex, level (critical and error -> "error",
 * warning -> "warning", info -> "note"), message.text, a physical location
 * (artifactLocation.uri = the repository-relative path, percent-encoded;
 * region.startLine) when the finding has a file, partialFingerprints
 * {"primaryLocationLineHash": "<fingerprint>:1", "forge/v1": "<fingerprint>"}
 * and properties {id, layer, category, severity, confidence}.
 *
 * Ownership: findings are borrowed; returned jv values are the caller's.
 */
#ifndef FORGE_SARIF_H
#define FORGE_SARIF_H

#include <jv.h>

/* The log for an array of findings (review.h form).  Borrows findings. */
jv sarif_log(jv findings, const char *tool_version);

/* Write the log to path (pretty-printed).  -1 with a message naming the file. */
int sarif_write(const char *path, jv findings, const char *tool_version);

#endif
