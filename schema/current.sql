-- The gateway's schema (fencegw.*) as its migrations leave it: tables,
-- sequences, indexes and constraints, in pg_dump's order. Generated; do not
-- edit: go test ./schema -run TestCurrentSchema -update. The migrations
-- (schema/migrations) are its history; the functions' current bodies live
-- beside the Go that calls them (fence/sql, guard/sql).

--
-- Name: fencegw; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA fencegw;

--
-- Name: authority; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.authority (
    epoch bigint NOT NULL,
    cluster_id text,
    max_revision bigint DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    identity text,
    CONSTRAINT authority_epoch_check CHECK ((epoch > 0))
);

--
-- Name: bypass_log; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.bypass_log (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    by_user text NOT NULL,
    by_role text NOT NULL,
    application text NOT NULL,
    txid bigint NOT NULL,
    why text NOT NULL,
    CONSTRAINT bypass_log_why_check CHECK (((length(btrim(why)) >= 1) AND (length(btrim(why)) <= 1000)))
);

--
-- Name: bypass_log_id_seq; Type: SEQUENCE; Schema: fencegw; Owner: -
--

CREATE SEQUENCE fencegw.bypass_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: bypass_log_id_seq; Type: SEQUENCE OWNED BY; Schema: fencegw; Owner: -
--

ALTER SEQUENCE fencegw.bypass_log_id_seq OWNED BY fencegw.bypass_log.id;

--
-- Name: fence_floor; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.fence_floor (
    singleton boolean DEFAULT true NOT NULL,
    epoch bigint NOT NULL,
    revision bigint NOT NULL,
    raised_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT fence_floor_epoch_check CHECK ((epoch > 0)),
    CONSTRAINT fence_floor_revision_check CHECK ((revision >= 0)),
    CONSTRAINT fence_floor_singleton_check CHECK (singleton)
);

--
-- Name: fences; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.fences (
    resource text NOT NULL,
    epoch bigint NOT NULL,
    revision bigint NOT NULL,
    writes bigint DEFAULT 1 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    xact xid8,
    CONSTRAINT fences_epoch_check CHECK ((epoch > 0)),
    CONSTRAINT fences_token_check CHECK ((revision > 0))
);

--
-- Name: front_sessions; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.front_sessions (
    pid integer NOT NULL,
    secret bytea NOT NULL,
    role name NOT NULL,
    client text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT front_sessions_secret_check CHECK ((length(secret) = 32))
);

--
-- Name: history_cursor; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.history_cursor (
    singleton boolean DEFAULT true NOT NULL,
    identity text NOT NULL,
    revision bigint NOT NULL,
    CONSTRAINT history_cursor_revision_check CHECK ((revision > 0)),
    CONSTRAINT history_cursor_singleton_check CHECK (singleton)
);

--
-- Name: idempotency_keys; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.idempotency_keys (
    client text NOT NULL,
    operation text NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    status integer,
    response bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: lock_history; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.lock_history (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    resource text NOT NULL,
    event text NOT NULL,
    lease_id text,
    client text,
    token text,
    actor text,
    reason text,
    CONSTRAINT lock_history_event_check CHECK ((event = ANY (ARRAY['granted'::text, 'released'::text, 'expired'::text, 'revoked'::text, 'lock-delay'::text, 'fence-advanced'::text])))
);

--
-- Name: lock_history_id_seq; Type: SEQUENCE; Schema: fencegw; Owner: -
--

CREATE SEQUENCE fencegw.lock_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: lock_history_id_seq; Type: SEQUENCE OWNED BY; Schema: fencegw; Owner: -
--

ALTER SEQUENCE fencegw.lock_history_id_seq OWNED BY fencegw.lock_history.id;

--
-- Name: rejections; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.rejections (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    resource text NOT NULL,
    operation text NOT NULL,
    reason text NOT NULL,
    presented text,
    current text,
    suppressed bigint DEFAULT 0 NOT NULL,
    client text,
    request_id text,
    remote_addr text,
    CONSTRAINT rejections_suppressed_check CHECK ((suppressed >= 0))
);

--
-- Name: rejections_id_seq; Type: SEQUENCE; Schema: fencegw; Owner: -
--

CREATE SEQUENCE fencegw.rejections_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: rejections_id_seq; Type: SEQUENCE OWNED BY; Schema: fencegw; Owner: -
--

ALTER SEQUENCE fencegw.rejections_id_seq OWNED BY fencegw.rejections.id;

--
-- Name: replicas; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.replicas (
    name text NOT NULL,
    policy text NOT NULL,
    fences text NOT NULL,
    started timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: transaction_keys; Type: TABLE; Schema: fencegw; Owner: -
--

CREATE TABLE fencegw.transaction_keys (
    client text NOT NULL,
    key text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT transaction_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255)))
);

--
-- Name: bypass_log id; Type: DEFAULT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.bypass_log ALTER COLUMN id SET DEFAULT nextval('fencegw.bypass_log_id_seq'::regclass);

--
-- Name: lock_history id; Type: DEFAULT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.lock_history ALTER COLUMN id SET DEFAULT nextval('fencegw.lock_history_id_seq'::regclass);

--
-- Name: rejections id; Type: DEFAULT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.rejections ALTER COLUMN id SET DEFAULT nextval('fencegw.rejections_id_seq'::regclass);

--
-- Name: authority authority_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.authority
    ADD CONSTRAINT authority_pkey PRIMARY KEY (epoch);

--
-- Name: bypass_log bypass_log_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.bypass_log
    ADD CONSTRAINT bypass_log_pkey PRIMARY KEY (id);

--
-- Name: fence_floor fence_floor_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.fence_floor
    ADD CONSTRAINT fence_floor_pkey PRIMARY KEY (singleton);

--
-- Name: fences fences_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.fences
    ADD CONSTRAINT fences_pkey PRIMARY KEY (resource);

--
-- Name: front_sessions front_sessions_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.front_sessions
    ADD CONSTRAINT front_sessions_pkey PRIMARY KEY (pid);

--
-- Name: history_cursor history_cursor_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.history_cursor
    ADD CONSTRAINT history_cursor_pkey PRIMARY KEY (singleton);

--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (client, operation, key);

--
-- Name: lock_history lock_history_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.lock_history
    ADD CONSTRAINT lock_history_pkey PRIMARY KEY (id);

--
-- Name: rejections rejections_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.rejections
    ADD CONSTRAINT rejections_pkey PRIMARY KEY (id);

--
-- Name: replicas replicas_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.replicas
    ADD CONSTRAINT replicas_pkey PRIMARY KEY (name);

--
-- Name: transaction_keys transaction_keys_pkey; Type: CONSTRAINT; Schema: fencegw; Owner: -
--

ALTER TABLE ONLY fencegw.transaction_keys
    ADD CONSTRAINT transaction_keys_pkey PRIMARY KEY (client, key);

--
-- Name: idempotency_keys_created_at; Type: INDEX; Schema: fencegw; Owner: -
--

CREATE INDEX idempotency_keys_created_at ON fencegw.idempotency_keys USING btree (created_at);

--
-- Name: lock_history_lease_end; Type: INDEX; Schema: fencegw; Owner: -
--

CREATE UNIQUE INDEX lock_history_lease_end ON fencegw.lock_history USING btree (lease_id) WHERE ((lease_id IS NOT NULL) AND (event = ANY (ARRAY['released'::text, 'expired'::text, 'revoked'::text])));

--
-- Name: lock_history_lease_event; Type: INDEX; Schema: fencegw; Owner: -
--

CREATE UNIQUE INDEX lock_history_lease_event ON fencegw.lock_history USING btree (lease_id, event) WHERE (lease_id IS NOT NULL);

--
-- Name: lock_history_resource_id; Type: INDEX; Schema: fencegw; Owner: -
--

CREATE INDEX lock_history_resource_id ON fencegw.lock_history USING btree (resource, id);

--
-- Name: rejections_reason_client_id; Type: INDEX; Schema: fencegw; Owner: -
--

CREATE INDEX rejections_reason_client_id ON fencegw.rejections USING btree (reason, client, id);


--
--
