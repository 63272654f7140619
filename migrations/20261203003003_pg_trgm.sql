-- migrate:up
-- The console's search by content (origin/console/search.ts) matches text anywhere in a message
-- (ILIKE '%…%'), which a trigram index serves; pg_trgm ships with Postgres (and Neon, and PGlite).
-- Creating the extension locks no table.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- migrate:down
DROP EXTENSION IF EXISTS pg_trgm;
