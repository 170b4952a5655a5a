/*
 * s3_xml.h: the little of XML that S3 answers need — the text of named elements, in order.
 * S3's answers (an <Error> with <Code> and <Message>, a <ListBucketResult> with <Key>,
 * <IsTruncated> and <NextContinuationToken>) are flat enough that trove never builds a
 * tree: it scans for one element name at a time. The bytes come from the network, so the
 * scanner trusts nothing: it never reads past len, never needs a terminating NUL, and
 * bounds every text it returns by the caller's buffer.
 */
#ifndef TROVE_STORE_S3_XML_H
#define TROVE_STORE_S3_XML_H

#include <stddef.h>

/*
 * The next element <tag>text</tag> (or <tag/>, or <tag attr="...">) that starts at or after
 * *pos in xml[0, len): its text, with the five predefined entities and numeric character
 * references below 128 decoded, into out (cap bytes with the NUL), and *pos moved past its
 * end tag. Returns 1 found, 0 no such element (or an element that never ends), or
 * TROVE_ERR_LIMIT when the text does not fit in cap - 1 bytes and TROVE_ERR_CORRUPT for a
 * bad entity or a child element inside (out is then empty and *pos past the start tag).
 */
int trove__s3_xml_next(const char *xml, size_t len, size_t *pos, const char *tag, char *out,
                       size_t cap);

#endif
