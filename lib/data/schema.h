/*
 * schema.h - JSON Schema validation (the subset of draft 2020-12 that Forge
 * uses).
 *
 * Supported keywords: type, enum, const, properties, required,
 * additionalProperties, patternProperties, items (a schema), prefixItems,
 * minItems, maxItems, uniqueItems, minLength, maxLength, pattern (PCRE2
 * syntax, UTF + UCP, unanchored as JSON Schema requires), minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, multipleOf, minProperties,
 * maxProperties, anyOf, oneOf, allOf, not, $defs (and draft 7's
 * definitions), $ref to any JSON pointer inside the same document ("#",
 * "#/$defs/x", "#/properties/a", with ~0 ~1 and %XX escapes, also written
 * after the root's own $id), plus the annotations $schema, $id (at the root
 * only: below it, it would start an embedded resource), $comment, title,
 * description, default, examples, format (not asserted), deprecated,
 * readOnly, writeOnly.  A schema using any other keyword, or a $ref to
 * another document or an anchor, is refused by schema_compile(), never
 * silently accepted; so is a $ref cycle that would recurse without
 * descending into the instance.
 *
 * Semantics: in 2020-12 a $ref applies alongside its sibling keywords;
 * 1.0 is an integer and equal to 1 (enum, const, uniqueItems); lengths
 * count code points; multipleOf accepts a quotient within a relative 1e-9
 * of an integer, since 0.0075 / 0.0001 is not exact in binary.
 */
#ifndef FORGE_SCHEMA_H
#define FORGE_SCHEMA_H

#include <jv.h>
#include <stdbool.h>

struct schema;

/*
 * Check that `doc` is a schema this validator fully understands and keep it
 * for validation.  Consumes doc.  Returns 0 and *out, or -1 with a message
 * naming the path of the first unsupported keyword or malformed part
 * ("#/properties/x: unsupported keyword 'dependentRequired'").  It is
 * schema_compile_lazy() over doc's JSON text (json_dumps, kept by the
 * schema), then schema_compile_rest(): the one compiler, run to the end.
 * A schema may nest MAX_SCHEMA_DEPTH (256) levels; its text 1028 in
 * json_scan's count (an object 2, an array 1), more than libjq parses.
 */
int schema_compile(struct schema **out, jv doc);

/*
 * schema_compile(), telling why a schema is refused: *unsupported (may be
 * NULL) is true when the first error met is about what this validator does
 * not implement -- a keyword it does not know ("if", "dependentRequired"),
 * a $ref to another document or an anchor, an 'items' array, $id below the
 * root, a pattern PCRE2 does not take, a $ref cycle or chain it cannot
 * follow -- which a full validator may accept; false when the schema breaks
 * JSON Schema itself ("properties": "nope", "type": "strng", "required":
 * "x", a $ref to nothing) or nests too deep.  Only the first error is
 * judged: a schema with both kinds says the kind of the one met first.
 */
int schema_compile_checked(struct schema **out, jv doc, bool *unsupported);

/*
 * Like schema_compile, lazily: text (borrowed: it must outlive the schema)
 * is checked as JSON and its root compiled now; every other subschema is
 * compiled from its own text when first reached (by validation, a $ref, or
 * schema_compile_rest), its $ref resolved then.  Two equal keys in one
 * object of the text are refused ("#: duplicate keyword 'type'"), not
 * guessed at as libjq would.  A part of the document that nothing reaches
 * is never judged; when one that validation reaches is bad, that validation
 * and every later one fail with its message ("#/$defs/x: unsupported
 * keyword 'if'").  schema_validate* and schema_free take it like any other.
 */
int schema_compile_lazy(struct schema **out, const char *text, size_t len);

/*
 * Compile every part of a lazy schema not compiled yet, so a bad part is
 * reported now (for checking a whole document; schema_compile() ends with
 * it).  Returns 0, or -1 with the first error met in the order of the nodes
 * made: a schema with several bad parts names the one this order reaches
 * first.  A no-op on a schema from schema_compile().
 */
int schema_compile_rest(struct schema *s);

/*
 * The embedded schema called name (resource.h: "event.schema.json"),
 * compiled lazily (schema_compile_lazy): a process pays for the parts its
 * validations reach.  The result is cached for the life of the process and
 * shared: do not free it.  Validating it may compile more of it: like the
 * validation of any schema, that holds one process-wide lock, so threads
 * may validate at once (one after the other).
 * Returns NULL with a message when there is no such schema or its text or
 * root is bad; tests/unit/test_schema.c compiles every embedded schema
 * whole.
 */
const struct schema *schema_get(const char *name);

/*
 * The tool NAME as sent to a model, from its embedded input schema
 * "tools/NAME.json" (schemas/tools/, the one its answers are checked
 * against with schema_get()): {name, description: the schema's,
 * input_schema: the schema without $schema, $id, title, description and
 * $comment}.  A name without a schema file gets {"type": "object"} (a test,
 * tests/unit/test_schema.c, checks that every such tool has one).
 */
jv schema_tool_spec(const char *name);

/*
 * The input schema of a tool, from the embedded resource name
 * ("tools/read_file.json"), as schema_tool_spec() and tool_spec() send it:
 * the document without its top-level $schema, $id, title, description and
 * $comment, and *description (a new reference: the document's description,
 * or jv_null() when it has none).  The resource's text is skimmed member by
 * member and the dropped ones are not parsed: about half of a tool's text
 * is its description and notes.  An invalid jv, *description null, when
 * there is no such resource; what json_parse() makes of one that does not
 * parse.
 */
jv schema_tool_input(jv *description, const char *name);

/*
 * Validate instance against s.  Borrows instance.  Returns 0 when valid, or
 * -1 with a message naming the JSON path of the first error and what was
 * wrong: ".plan.tasks[2].id: expected string, got number".
 */
int schema_validate(const struct schema *s, jv instance);

/* How many errors schema_validate_all lists at most. */
#define SCHEMA_MAX_ERRORS 20

/*
 * Like schema_validate, but on past the first error to every other one (the
 * next member, item and keyword), so that one reading tells a person or a
 * model all that is wrong: after a failed keyword the rest of that value's
 * keywords are skipped, not its siblings.  Returns 0 when valid, or -1 with
 * the errors joined by "; " as the message.  *errors, when errors is not
 * NULL, is set either way to a new array (the caller owns it) of the
 * distinct "path: what" strings in the order met, at most SCHEMA_MAX_ERRORS
 * (the message then ends "; and more ..."); empty when valid.
 */
int schema_validate_all(jv *errors, const struct schema *s, jv instance);

/* Like schema_validate but only answers; sets no message. */
bool schema_is_valid(const struct schema *s, jv instance);

/*
 * Validate against the named schema at a sub-schema pointer, e.g.
 * schema_validate_def("state.schema.json", "plan", v) checks v against
 * #/$defs/plan.  Borrows instance.
 */
int schema_validate_def(const char *name, const char *def, jv instance);

/* schema_validate_all at a sub-schema pointer, as schema_validate_def.  A
 * missing schema or definition is -1 with its message as the one error. */
int schema_validate_def_all(jv *errors, const char *name, const char *def, jv instance);

void schema_free(struct schema *s);

/*
 * A schema as a model is shown it: node with every "#/$defs/NAME" $ref of
 * its document replaced by that definition of defs (a $ref to a missing
 * one is left as it is), and without $comment, $schema, $id and $defs at
 * any depth: one self-contained schema.  Consumes node, borrows defs.
 */
jv schema_inline(jv node, jv defs);

/*
 * The embedded schema NAME ("state.schema.json", "compile/intent.schema.json")
 * as a model is shown it: its definition #/$defs/DEF, or the whole document
 * when def is NULL, through schema_inline().  A new reference; jv_null()
 * when there is no such schema, its text does not parse or it has no such
 * definition.
 */
jv schema_for_model(const char *name, const char *def);

/* PCRE2's version ("10.42 2022-12-11"), the engine of "pattern": a new
 * jv string, or jv_null() when PCRE2 cannot tell. */
jv schema_regex_version(void);

#endif
