package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

type pageSet struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	"bytes": func(n int64) string {
		if n < 0 {
			return "-"
		}
		const unit = 1024
		if n < unit {
			return fmt.Sprintf("%d B", n)
		}
		div, exp := int64(unit), 0
		for m := n / unit; m >= unit; m /= unit {
			div *= unit
			exp++
		}
		return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
	},
	"ids": func(ids []int32) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(int(id))
		}
		return strings.Join(s, ",")
	},
	"pct":   func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	"path":  url.PathEscape,
	"add":   func(a, b int) int { return a + b },
	"sub64": func(a, b int64) int64 { return a - b },
}

func loadPages() (*pageSet, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	ps := &pageSet{pages: map[string]*template.Template{}}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		ps.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	return ps, nil
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	User     string
	Login    bool // the console requires a login (SASL)
	LoggedIn bool
	CSRF     string
	Writes   bool
	Flash    string
	Error    string
	Data     any
}

type ctxKey struct{}

func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(ctxKey{}).(*session)
	return s
}

// Handler serves the console.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", c.page("login", c.loginPage))
	mux.HandleFunc("POST /login", c.page("login", c.loginPost))
	mux.HandleFunc("POST /logout", c.logoutPost)
	mux.HandleFunc("GET /{$}", c.page("overview", c.overviewPage))
	mux.HandleFunc("GET /topics", c.page("topics", c.topicsPage))
	mux.HandleFunc("POST /topics", c.action("create topic", c.createTopic))
	mux.HandleFunc("GET /topics/{topic}", c.page("topic", c.topicPage))
	mux.HandleFunc("POST /topics/{topic}/config", c.action("alter config", c.alterConfig))
	mux.HandleFunc("POST /topics/{topic}/delete-records", c.action("delete records", c.deleteRecords))
	mux.HandleFunc("GET /topics/{topic}/messages", c.page("messages", c.messagesPage))
	mux.HandleFunc("GET /topics/{topic}/compaction", c.page("compaction", c.compactionPage))
	mux.HandleFunc("GET /groups", c.page("groups", c.groupsPage))
	mux.HandleFunc("GET /groups/{group}", c.page("group", c.groupPage))
	mux.HandleFunc("POST /groups/{group}/reset", c.action("reset offsets", c.resetOffsets))
	mux.HandleFunc("GET /users", c.page("users", c.usersPage))
	mux.HandleFunc("POST /users", c.action("save user", c.createUser))
	mux.HandleFunc("POST /users/{user}/delete", c.action("delete user", c.deleteUser))
	mux.HandleFunc("GET /acls", c.page("acls", c.aclsPage))
	mux.HandleFunc("POST /acls", c.action("create ACL", c.createACL))
	mux.HandleFunc("POST /acls/delete", c.action("delete ACL", c.deleteACL))
	return c.guard(mux)
}

// guard applies the checks every request passes: Host, security headers,
// the session, the login (with SASL), and for POST the origin and the CSRF
// token.
func (c *Console) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if !c.hostAllowed(r.Host) {
			http.Error(w, "console: Host "+r.Host+" is not allowed (add it to console.allowed.hosts)", http.StatusMisdirectedRequest)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Cache-Control", "no-store")
		s := c.session(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := sameOrigin(r); err != nil {
				http.Error(w, "console: "+err.Error(), http.StatusForbidden)
				return
			}
			if err := r.ParseForm(); err != nil {
				http.Error(w, "console: bad form", http.StatusBadRequest)
				return
			}
			if !s.csrfOK(r.PostForm.Get("csrf")) {
				http.Error(w, "console: missing or stale CSRF token (reload the page)", http.StatusForbidden)
				return
			}
		}
		if s.p == nil && r.URL.Path != "/login" {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			} else {
				http.Error(w, "console: log in first", http.StatusUnauthorized)
			}
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	})
}

func (c *Console) newView(s *session, nav string) *view {
	v := &view{Nav: nav, Login: c.opts.SASLMechanism != "", CSRF: s.csrf, Writes: c.canWrite(s)}
	if s.p != nil && c.opts.SASLMechanism != "" {
		v.User, v.LoggedIn = s.p.user, true
	}
	return v
}

// page wraps a GET (or login) handler: it fills the view and renders the
// template; an error is shown on the page, with 404 for an unknown topic or
// group.
func (c *Console) page(name string, h func(w http.ResponseWriter, r *http.Request, v *view) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		if s == nil {
			s = c.session(w, r)
		}
		v := c.newView(s, name)
		v.Flash = r.URL.Query().Get("done")
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout*3)
		defer cancel()
		err := h(w, r.WithContext(ctx), v)
		if errors.Is(err, errHandled) {
			return
		}
		status := http.StatusOK
		if err != nil {
			v.Error = err.Error()
			v.Data = nil
			status = http.StatusBadGateway
			if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.GroupIDNotFound) {
				status = http.StatusNotFound
			}
			var be badRequest
			if errors.As(err, &be) {
				status = http.StatusBadRequest
			}
		}
		c.render(w, status, name, v)
	}
}

var errHandled = errors.New("handled")

type badRequest struct{ error }

func (c *Console) render(w http.ResponseWriter, status int, name string, v *view) {
	t := c.pages.pages[name]
	if v.Title == "" {
		v.Title = name
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf strings.Builder
	if err := t.Execute(&buf, v); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "console: cannot render the page", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}

// --- login -------------------------------------------------------------------

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, v *view) error {
	if c.opts.SASLMechanism == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return errHandled
	}
	v.Title = "Log in"
	v.Data = loginData{Next: safeNext(r.URL.Query().Get("next")), Mechanism: c.opts.SASLMechanism, Mechanisms: c.opts.SASLMechanisms}
	return nil
}

type loginData struct {
	Next, Mechanism, User string
	Mechanisms            []string
}

// safeNext keeps a redirect target on this console.
func safeNext(n string) string {
	if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.HasPrefix(n, "/\\") {
		return "/"
	}
	return n
}

func (c *Console) loginPost(w http.ResponseWriter, r *http.Request, v *view) error {
	if c.opts.SASLMechanism == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return errHandled
	}
	user, pass := r.PostForm.Get("user"), r.PostForm.Get("password")
	mech := r.PostForm.Get("mechanism")
	if mech == "" {
		mech = c.opts.SASLMechanism
	}
	next := safeNext(r.PostForm.Get("next"))
	v.Title = "Log in"
	v.Data = loginData{Next: next, Mechanism: mech, Mechanisms: c.opts.SASLMechanisms, User: user}
	if user == "" {
		w.WriteHeader(http.StatusBadRequest)
		v.Error = "user name required"
		c.render(w, http.StatusBadRequest, "login", v)
		return errHandled
	}
	addr := clientAddr(r)
	if c.loginBlocked(addr, time.Now()) {
		v.Error = fmt.Sprintf("too many failed logins from %s: wait a minute", addr)
		c.render(w, http.StatusTooManyRequests, "login", v)
		return errHandled
	}
	p, err := c.login(r.Context(), mech, user, pass)
	if err != nil {
		c.loginFailed(addr, time.Now())
		c.log.Info("console login failed", "user", user, "addr", addr, "err", err)
		v.Error = "login failed: " + err.Error()
		c.render(w, http.StatusUnauthorized, "login", v)
		return errHandled
	}
	c.log.Info("console login", "user", user)
	c.startSession(w, r, sessionOf(r), p)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return errHandled
}

func (c *Console) logoutPost(w http.ResponseWriter, r *http.Request) {
	c.logout(w, r, sessionOf(r))
	if c.opts.SASLMechanism == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// --- read pages ----------------------------------------------------------------

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = "Cluster"
	d, err := c.overview(r.Context(), sessionOf(r).p)
	v.Data = d
	return err
}

func (c *Console) topicsPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = "Topics"
	internal := r.URL.Query().Get("internal") == "1"
	rows, err := c.topicList(r.Context(), sessionOf(r).p, internal)
	v.Data = map[string]any{"Topics": rows, "Internal": internal, "Traffic": c.trafficScope()}
	return err
}

func (c *Console) topicPage(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("topic")
	v.Title = "Topic " + name
	d, err := c.topic(r.Context(), sessionOf(r).p, name, r.URL.Query().Get("configs") == "all")
	v.Data = d
	return err
}

func (c *Console) messagesPage(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("topic")
	v.Title = "Messages of " + name
	q := r.URL.Query()
	bq := browseQuery{Partition: q.Get("partition"), From: q.Get("from"), Time: q.Get("time"), Key: q.Get("key"), Format: q.Get("format"), Limit: 50}
	if bq.From == "" {
		bq.From = "start"
	}
	switch bq.Format {
	case "text", "json", "hex":
	default:
		bq.Format = "text"
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return badRequest{fmt.Errorf("bad offset %q", s)}
		}
		bq.Offset = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return badRequest{fmt.Errorf("bad limit %q (1 to 1000)", s)}
		}
		bq.Limit = n
	}
	d, err := c.browse(r.Context(), sessionOf(r).p, name, bq)
	v.Data = d
	return err
}

func (c *Console) compactionPage(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("topic")
	v.Title = "Compaction of " + name
	p := sessionOf(r).p
	d, err := c.compaction(r.Context(), p, name)
	if err != nil {
		return err
	}
	out := map[string]any{"C": d, "Key": r.URL.Query().Get("key"), "Looked": r.URL.Query().Has("key")}
	if r.URL.Query().Has("key") {
		rows, n, err := c.latestByKey(r.Context(), p, name, r.URL.Query().Get("key"))
		out["Latest"], out["Scanned"] = rows, n
		if err != nil {
			out["LatestErr"] = err.Error()
		}
	}
	v.Data = out
	return nil
}

func (c *Console) groupsPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = "Consumer groups"
	rows, err := c.groupList(r.Context(), sessionOf(r).p)
	v.Data = rows
	return err
}

func (c *Console) groupPage(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("group")
	v.Title = "Group " + name
	d, err := c.group(r.Context(), sessionOf(r).p, name)
	v.Data = d
	return err
}

func (c *Console) usersPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = "SCRAM users"
	rows, err := c.users(r.Context(), sessionOf(r).p)
	v.Data = rows
	return err
}

// --- actions -------------------------------------------------------------------

// confirmData is the confirmation page of an action: what it will do, and
// the same form again with confirm=yes.
type confirmData struct {
	Action  string
	URL     string
	Summary string
	Details []string
	Fields  []field
	Back    string
}

type field struct{ Name, Value string }

// action wraps a state-changing handler: writes must be allowed; the
// handler gets confirmed=false first, and returns the confirmation page's
// text; with confirm=yes it acts and returns where to go next.
func (c *Console) action(name string, h func(r *http.Request, confirmed bool, cd *confirmData) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		v := c.newView(s, "confirm")
		v.Title = "Confirm: " + name
		if !c.canWrite(s) {
			v.Error = "the console is read-only: the broker has no SASL listener and console.allow.writes is false"
			c.render(w, http.StatusForbidden, "confirm", v)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout*3)
		defer cancel()
		r = r.WithContext(ctx)
		confirmed := r.PostForm.Get("confirm") == "yes"
		cd := &confirmData{Action: name, URL: r.URL.Path, Back: sameHostPath(r.Referer(), r.Host)}
		for k, vs := range r.PostForm {
			if k == "csrf" || k == "confirm" {
				continue
			}
			for _, val := range vs {
				cd.Fields = append(cd.Fields, field{k, val})
			}
		}
		sort.Slice(cd.Fields, func(i, j int) bool { return cd.Fields[i].Name < cd.Fields[j].Name })
		next, err := h(r, confirmed, cd)
		status := http.StatusOK
		if err != nil {
			v.Error = err.Error()
			status = http.StatusBadRequest
			var ke *kerr.Error
			if errors.As(err, &ke) {
				status = http.StatusBadGateway
			}
			cd.Fields = nil // nothing to confirm
		} else if confirmed {
			c.log.Info("console action", "action", name, "user", userOf(s), "target", r.URL.Path)
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		v.Data = cd
		c.render(w, status, "confirm", v)
	}
}

func userOf(s *session) string {
	if s.p == nil || s.p.user == "" {
		return "(no login)"
	}
	return s.p.user
}

func done(path, msg string) string { return path + "?done=" + url.QueryEscape(msg) }

func (c *Console) createTopic(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	if name == "" {
		return "", errors.New("topic name required")
	}
	parts, rf := int32(-1), int16(-1)
	if s := strings.TrimSpace(f.Get("partitions")); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 {
			return "", fmt.Errorf("bad partition count %q", s)
		}
		parts = int32(n)
	}
	if s := strings.TrimSpace(f.Get("replication")); s != "" {
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil || n < 1 {
			return "", fmt.Errorf("bad replication factor %q", s)
		}
		rf = int16(n)
	}
	configs := map[string]*string{}
	var lines []string
	for _, line := range strings.Split(f.Get("configs"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok {
			return "", fmt.Errorf("config %q: want name=value", line)
		}
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		configs[k] = &val
		lines = append(lines, k+"="+val)
	}
	if !confirmed {
		cd.Summary = "Create topic " + name
		cd.Details = append(cd.Details, "partitions: "+orDefault(int64(parts)), "replication factor: "+orDefault(int64(rf)))
		for _, l := range lines {
			cd.Details = append(cd.Details, "config "+l)
		}
		return "", nil
	}
	resp, err := sessionOf(r).p.adm.CreateTopic(r.Context(), parts, rf, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return "", errors.New(kafkaErr(err, resp.ErrMessage))
	}
	return done("/topics/"+url.PathEscape(name), "created topic "+name), nil
}

func orDefault(n int64) string {
	if n < 0 {
		return "broker default"
	}
	return strconv.FormatInt(n, 10)
}

func (c *Console) alterConfig(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	topic := r.PathValue("topic")
	f := r.PostForm
	key, val := strings.TrimSpace(f.Get("key")), f.Get("value")
	if key == "" {
		return "", errors.New("config name required")
	}
	ac := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &val}
	what := fmt.Sprintf("set %s=%s on topic %s", key, val, topic)
	if f.Get("op") == "delete" {
		ac = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
		what = fmt.Sprintf("remove the override of %s on topic %s (back to the broker's value)", key, topic)
	}
	if !confirmed {
		cd.Summary = strings.ToUpper(what[:1]) + what[1:]
		return "", nil
	}
	rs, err := sessionOf(r).p.adm.AlterTopicConfigs(r.Context(), []kadm.AlterConfig{ac}, topic)
	if err != nil {
		return "", err
	}
	for _, x := range rs {
		if x.Err != nil {
			return "", errors.New(kafkaErr(x.Err, x.ErrMessage))
		}
	}
	return done("/topics/"+url.PathEscape(topic), what), nil
}

func (c *Console) deleteRecords(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	topic := r.PathValue("topic")
	f := r.PostForm
	part, err := strconv.ParseInt(strings.TrimSpace(f.Get("partition")), 10, 32)
	if err != nil || part < 0 {
		return "", fmt.Errorf("bad partition %q", f.Get("partition"))
	}
	before, err := strconv.ParseInt(strings.TrimSpace(f.Get("before")), 10, 64)
	if err != nil || before < 0 {
		return "", fmt.Errorf("bad offset %q", f.Get("before"))
	}
	if !confirmed {
		cd.Summary = fmt.Sprintf("Delete the records of %s/%d before offset %d", topic, part, before)
		cd.Details = []string{"The log start offset moves to " + strconv.FormatInt(before, 10) + "; the records before it cannot be read any more. This cannot be undone."}
		return "", nil
	}
	os := make(kadm.Offsets)
	os.Add(kadm.Offset{Topic: topic, Partition: int32(part), At: before, LeaderEpoch: -1})
	rs, err := sessionOf(r).p.adm.DeleteRecords(r.Context(), os)
	if err != nil {
		return "", err
	}
	if err := rs.Error(); err != nil {
		return "", err
	}
	return done("/topics/"+url.PathEscape(topic), fmt.Sprintf("deleted the records of %s/%d before offset %d", topic, part, before)), nil
}

func (c *Console) resetOffsets(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	group := r.PathValue("group")
	f := r.PostForm
	p := sessionOf(r).p
	ctx := r.Context()
	dg, err := p.adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", err
	}
	if g, ok := dg[group]; ok {
		if g.Err != nil {
			return "", errors.New(kafkaErr(g.Err, g.ErrMessage))
		}
		if len(g.Members) > 0 {
			return "", fmt.Errorf("group %s has %d active members: stop its consumers first (Kafka refuses to reset the offsets of an active group)", group, len(g.Members))
		}
	}
	plan, err := c.resetPlan(ctx, p, group, strings.TrimSpace(f.Get("topic")), f.Get("to"), f.Get("value"))
	if err != nil {
		return "", err
	}
	if !confirmed {
		cur, _ := p.adm.FetchOffsets(ctx, group)
		cd.Summary = "Reset the committed offsets of group " + group
		for _, o := range plan.Sorted() {
			was := "none"
			if c, ok := cur.Lookup(o.Topic, o.Partition); ok && c.Err == nil {
				was = strconv.FormatInt(c.At, 10)
			}
			cd.Details = append(cd.Details, fmt.Sprintf("%s/%d: %s → %d", o.Topic, o.Partition, was, o.At))
		}
		return "", nil
	}
	rs, err := p.adm.CommitOffsets(ctx, group, plan)
	if err != nil {
		return "", err
	}
	if err := rs.Error(); err != nil {
		return "", err
	}
	return done("/groups/"+url.PathEscape(group), fmt.Sprintf("reset %d offsets", len(plan.Sorted()))), nil
}

// sameHostPath returns ref's path and query if it points at this console.
func sameHostPath(ref, host string) string {
	u, err := url.Parse(ref)
	if err != nil || !strings.EqualFold(u.Host, host) {
		return ""
	}
	return safeNext(u.RequestURI())
}
