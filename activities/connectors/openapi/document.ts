// A REST API's OpenAPI document fetched from where a connection names it (model/openapi-document.ts reads it).
import { parse as parseYaml } from 'yaml';
import type { OpenApiConfig } from '../../../model/connection';
import { OpenApiDocumentError, openApiBaseUrl, openApiOperations, type Json } from '../../../model/openapi-document';
import { publicFetch } from '../../tools/ssrf-guard';

const maxDocumentBytes = 5 * 1024 * 1024;

/** Fetches (only from a public address, unless allowed) and parses the document a connection names. */
export async function fetchOpenApiDocument(url: string, allowHosts: readonly string[]): Promise<Json> {
  const res = await publicFetch(allowHosts)(url, { redirect: 'error', signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new OpenApiDocumentError(`${url} answered ${res.status}`);
  const text = await res.text();
  if (text.length > maxDocumentBytes) throw new OpenApiDocumentError(`${url} is larger than 5 MB`);
  try {
    return (text.trimStart().startsWith('{') ? JSON.parse(text) : parseYaml(text)) as Json;
  } catch (err) {
    throw new OpenApiDocumentError(`${url} is neither JSON nor YAML: ${(err as Error).message}`);
  }
}

/** The config to store: the document fetched once when only its URL was given, and checked. */
export async function completeOpenApiConfig(
  config: OpenApiConfig,
  allowHosts: readonly string[],
): Promise<OpenApiConfig> {
  const document = config.document ?? (await fetchOpenApiDocument(config.document_url!, allowHosts));
  // The operations in the document's order, kept apart: a stored document (jsonb) does not keep the order of its paths.
  const operations = openApiOperations(document, config.operations).map((op) => op.id);
  const complete = { ...config, document, operations };
  openApiBaseUrl(complete);
  return complete;
}
