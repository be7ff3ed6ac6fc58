package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/test/bench/benchkit"
)

// tenantRatioTarget is issue 31's bound on onboarding ÷ the scripted
// reference, at tenantTargetN.
const (
	tenantRatioTarget = 1.2
	tenantTargetN     = 1000
)

var tenantsGVR = v1alpha1.GroupVersion.WithResource("tenants")

// tenantResources are what the Tenant controller writes, as the API server
// counts them (the Tenants' creates are this program's).
var tenantResources = []string{"example.com/tenants-POST", "example.com/tenants/status", "namespaces", "rbac.authorization.k8s.io/rolebindings",
	"networking.k8s.io/networkpolicies", "serviceaccounts", "serviceaccounts/token", "secrets", "resourcequotas", "limitranges"}

func tenantName(i int) string { return fmt.Sprintf("t-%05d", i) }

// tenantObject is Tenant i: two namespaces, an owner, a ServiceAccount with
// credentials; no quota.
func tenantObject(i int) *v1alpha1.Tenant {
	name := tenantName(i)
	return &v1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.TenantSpec{
			Namespaces:     []string{name + "-a", name + "-b"},
			Owners:         []v1alpha1.TenantSubject{{Kind: v1alpha1.UserSubject, Name: "owner-" + name}},
			ServiceAccount: &v1alpha1.TenantServiceAccount{},
			Credentials:    &v1alpha1.TenantCredentials{},
		},
	}
}

// tenants is the tenant-onboarding scenario: rounds of the scripted
// reference and the operator, each on a fresh cluster; the last round's
// operator goes on with the writes, an idle window, a restart and the
// credentials.
func (r *runner) tenants(ctx context.Context) (*Tenants, error) {
	res := &Tenants{}
	var errs error
	for k := 1; k <= r.cfg.Rounds && ctx.Err() == nil; k++ {
		r.logf("tenants: round %d/%d", k, r.cfg.Rounds)
		var round TenantRound
		if err := r.tenantsScripted(ctx, k, &round); err != nil {
			errs = errors.Join(errs, fmt.Errorf("round %d, scripted: %w", k, err))
		}
		var last *Tenants
		if k == r.cfg.Rounds {
			last = res
		}
		if err := r.tenantsOperator(ctx, k, &round, last); err != nil {
			errs = errors.Join(errs, fmt.Errorf("round %d, operator: %w", k, err))
		}
		if round.Scripted.ok() && round.Operator.ok() && round.Scripted.Seconds > 0 {
			v := benchkit.Round3(round.Operator.Seconds / round.Scripted.Seconds)
			round.Ratio = &v
		}
		res.Rounds = append(res.Rounds, round)
	}
	ratios := make([]*float64, len(res.Rounds))
	for i, round := range res.Rounds {
		ratios[i] = round.Ratio
	}
	res.Ratio = benchkit.Median(ratios)
	return res, errs
}

// readyWatch marks each Tenant when the watch first sees it Ready.
type readyWatch struct {
	mu    sync.Mutex
	ready map[string]time.Time
	start time.Time
}

func (p *phase) watchTenants(ctx context.Context) (*readyWatch, func()) {
	w := &readyWatch{ready: map[string]time.Time{}}
	infCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := dynamicinformer.NewDynamicSharedInformerFactory(p.c.Dyn, 0)
	inf := f.ForResource(tenantsGVR).Informer()
	_, _ = inf.AddEventHandler(handler(func(obj metav1.Object, deleted bool) {
		if u, ok := obj.(*unstructured.Unstructured); ok && !deleted && benchkit.ConditionReady(u) {
			w.mark(u.GetName())
		}
	}))
	f.Start(infCtx.Done())
	f.WaitForCacheSync(infCtx.Done())
	return w, cancel
}

func (w *readyWatch) mark(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.ready[name]; !ok {
		w.ready[name] = time.Now()
	}
}

// wait waits until n objects are Ready, and measures from start.
func (w *readyWatch) wait(ctx context.Context, n int, start time.Time, logf func(string, ...any), what string) Wait {
	limit := start.Add(deadline(n))
	lastLog := time.Now()
	for {
		w.mu.Lock()
		count, latest := len(w.ready), time.Time{}
		for _, t := range w.ready {
			if t.After(latest) {
				latest = t
			}
		}
		w.mu.Unlock()
		if count >= n {
			return Wait{Seconds: benchkit.Round3(latest.Sub(start).Seconds()), Reached: count, Target: n}
		}
		if time.Now().After(limit) || ctx.Err() != nil {
			return Wait{Seconds: benchkit.Round3(time.Since(start).Seconds()), Reached: count, Target: n, TimedOut: true}
		}
		if time.Since(lastLog) > 5*time.Second {
			logf("%s: %d/%d Ready", what, count, n)
			lastLog = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tenantsScripted is the scripted reference: without an operator, the
// load client creates the N Tenants, and as many workers as the operator
// has make each one's objects (as the operator's builders describe them)
// and write its status Ready once.
func (r *runner) tenantsScripted(ctx context.Context, k int, round *TenantRound) error {
	p, stop, err := r.startPhase(ctx, fmt.Sprintf("tenants-scripted-%d", k), false, 0)
	if err != nil {
		return err
	}
	defer stop()
	watch, stopWatch := p.watchTenants(ctx)
	defer stopWatch()
	server, caData := p.c.Cluster.RESTConfig().Host, p.c.Cluster.RESTConfig().CAData

	created := make(chan *v1alpha1.Tenant, r.n)
	var work benchkit.Failures
	var wg sync.WaitGroup
	for range r.cfg.ScriptedWorkers {
		wg.Go(func() {
			for t := range created {
				work.Add(benchkit.Retried(ctx, func() error { return p.scriptTenant(ctx, t, server, caData) }))
			}
		})
	}
	start := time.Now()
	r.logf("tenants (scripted): creating %d Tenants; %d workers make their objects", r.n, r.cfg.ScriptedWorkers)
	failed, firstErr := benchkit.ForEach(ctx, r.n, r.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		t := tenantObject(i)
		if err := p.cl.Create(ctx, t); err != nil {
			return benchkit.IgnoreExists(err)
		}
		created <- t
		return nil
	})
	close(created)
	round.Scripted = watch.wait(ctx, r.n, start, r.logf, "tenants (scripted)")
	wg.Wait()
	errs, workErr := work.Count()
	round.ScriptedErrors = failed + errs
	if firstErr == nil {
		firstErr = workErr
	}
	if firstErr != nil {
		round.FirstError = firstErr.Error()
	}
	r.logf("tenants (scripted): every Tenant Ready after %.2f s (%d/%d, %d errors)", round.Scripted.Seconds, round.Scripted.Reached, r.n, round.ScriptedErrors)
	return nil
}

// scriptTenant makes what the operator makes for t, from its builders:
// the namespaces, a RoleBinding and a NetworkPolicy in each, the
// ServiceAccount, the credentials Secret with a token, and Ready status.
func (p *phase) scriptTenant(ctx context.Context, t *v1alpha1.Tenant, server string, caData []byte) error {
	owner := client.FieldOwner(platform.Name)
	held := slices.Sorted(slices.Values(t.Spec.Namespaces))
	create := func(ac any, obj client.Object) error {
		data, err := json.Marshal(ac)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, obj); err != nil {
			return err
		}
		return benchkit.IgnoreExists(p.cl.Create(ctx, obj, owner))
	}
	for _, ns := range t.Spec.Namespaces {
		if err := create(tenant.DesiredNamespace(t, ns), &corev1.Namespace{}); err != nil {
			return err
		}
	}
	for _, ns := range t.Spec.Namespaces {
		if rb := tenant.DesiredRoleBinding(t, ns, true); rb != nil {
			if err := create(rb, &rbacv1.RoleBinding{}); err != nil {
				return err
			}
		}
		if np := tenant.DesiredNetworkPolicy(t, ns, held); np != nil {
			if err := create(np, &networkingv1.NetworkPolicy{}); err != nil {
				return err
			}
		}
	}
	home, sa := tenant.HomeNamespace(t), tenant.ServiceAccountName(t)
	if err := create(tenant.DesiredServiceAccount(t), &corev1.ServiceAccount{}); err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tenant.CredentialsSecretName(t), Namespace: home, Labels: map[string]string{v1alpha1.TenantLabel: t.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, v1alpha1.GroupVersion.WithKind("Tenant"))}},
		Type: corev1.SecretTypeOpaque,
	}
	if err := p.cl.Create(ctx, secret, owner); err != nil {
		if err := benchkit.IgnoreExists(err); err != nil {
			return err
		}
		if err := p.cl.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(24 * 3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}
	if err := p.cl.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: home}}, request); err != nil {
		return err
	}
	kubeconfig, err := tenant.Kubeconfig(server, caData, home, fmt.Sprintf("system:serviceaccount:%s:%s", home, sa), request.Status.Token)
	if err != nil {
		return err
	}
	filled := secret.DeepCopy()
	filled.Data = map[string][]byte{v1alpha1.TenantKubeconfigKey: kubeconfig, v1alpha1.TenantTokenKey: []byte(request.Status.Token),
		v1alpha1.TenantNamespaceKey: []byte(home), v1alpha1.TenantCAKey: caData}
	if err := p.cl.Patch(ctx, filled, client.MergeFrom(secret), owner); err != nil {
		return err
	}
	status := t.DeepCopy()
	status.Status.ObservedGeneration = t.Generation
	status.Status.Ready = fmt.Sprintf("%d/%d", len(t.Spec.Namespaces), len(t.Spec.Namespaces))
	for _, ns := range t.Spec.Namespaces {
		status.Status.Namespaces = append(status.Status.Namespaces, v1alpha1.TenantNamespaceStatus{Name: ns, Phase: v1alpha1.NamespaceActive, Role: tenant.OwnerRole(t), Subjects: tenant.Subjects(t, true)})
	}
	status.Status.Conditions = []metav1.Condition{{Type: v1alpha1.TenantReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: t.Generation,
		LastTransitionTime: metav1.Now(), Reason: "Ready", Message: "Scripted"}}
	return p.cl.Status().Patch(ctx, status, client.MergeFrom(t), owner)
}

// tenantsOperator is the operator's onboarding of N Tenants; with last,
// the writes, the idle window, the restart and the credentials too.
func (r *runner) tenantsOperator(ctx context.Context, k int, round *TenantRound, last *Tenants) error {
	p, stop, err := r.startPhase(ctx, fmt.Sprintf("tenants-operator-%d", k), false, 0)
	if err != nil {
		return err
	}
	defer stop()
	if last != nil {
		defer func() {
			p.op.Stop()
			last.Operator = p.op.Footprint()
		}()
	}
	if _, err := p.op.Start(ctx); err != nil {
		return err
	}
	watch, stopWatch := p.watchTenants(ctx)
	defer stopWatch()
	op0, err := p.op.Metrics.WaitScrape(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	before, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return err
	}
	events0, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return err
	}
	cpu0 := p.op.CPUSeconds()
	start := time.Now()
	r.logf("tenants (operator): creating %d Tenants", r.n)
	failed, firstErr := benchkit.ForEach(ctx, r.n, r.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return benchkit.IgnoreExists(p.cl.Create(ctx, tenantObject(i)))
	})
	if failed > 0 {
		return fmt.Errorf("%d Tenants not created, the first: %w", failed, firstErr)
	}
	round.Operator = watch.wait(ctx, r.n, start, r.logf, "tenants (operator)")
	round.OperatorCPUSeconds = benchkit.Round3(p.op.CPUSeconds() - cpu0)
	r.logf("tenants (operator): every Tenant Ready after %.2f s (%d/%d)", round.Operator.Seconds, round.Operator.Reached, r.n)
	if last == nil {
		return nil
	}

	after, settled, err := p.settle(ctx, before, tenantResources)
	if err != nil {
		return err
	}
	if !settled.Settled {
		r.logf("tenants (operator): the writes had not stopped after %s", settled.Limit)
	}
	op1, err := p.op.Metrics.WaitScrape(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	events1, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return err
	}
	last.RawWrites = after.WritesSince(before)
	last.WritesPerTenant = writesPerTenant(r.n, last.RawWrites, op0, op1, eventsOf(events1, events0, benchkit.OperatorName+"/Tenant"))
	last.TokensIssued = childWrites(op1, "Tenant", "Secret", "issue") - childWrites(op0, "Tenant", "Secret", "issue")
	last.TokenRequests = last.RawWrites.Sum("serviceaccounts/token")
	secrets, err := p.credentialSecrets(ctx)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if s.hasToken {
			last.SecretsWithToken++
		}
	}
	r.logf("tenants (operator): writes per Tenant %v; %g tokens issued, %g token requests, %d Secrets with a token", last.WritesPerTenant, last.TokensIssued, last.TokenRequests, last.SecretsWithToken)

	if last.Idle, err = p.idleWindow(ctx); err != nil {
		return err
	}
	r.logf("tenants (operator): idle %.0f s: %g writes", last.Idle.Seconds, last.Idle.Total)
	if last.Restart, err = p.restartTenants(ctx, secrets, &last.SecretsChangedByRestart); err != nil {
		return err
	}
	r.logf("tenants (operator): restart: every Tenant reconciled after %.2f s; %g writes, %g token requests, %d credentials Secrets changed",
		last.Restart.Reconciled.Seconds, last.Restart.Total, last.Restart.TokenRequests, last.SecretsChangedByRestart)
	return nil
}

// childWrites is the operator's count of its writes to children.
func childWrites(samples []benchkit.Sample, owner, child, operation string) float64 {
	match := map[string]string{"owner_kind": owner}
	if child != "" {
		match["child_kind"] = child
	}
	if operation != "" {
		match["operation"] = operation
	}
	return benchkit.SumSamples(samples, "platform_operator_child_writes_total", match)
}

// writesPerTenant are the operator's writes of the onboarding per Tenant:
// its own count of child writes by kind and operation, the API server's
// count of status writes and of writes to the Tenants themselves (but
// their creates, which are this program's), and its events.
func writesPerTenant(n int, raw benchkit.RequestCounts, op0, op1 []benchkit.Sample, events int) map[string]float64 {
	out := map[string]float64{}
	count := func(samples []benchkit.Sample) map[string]float64 {
		m := map[string]float64{}
		for _, s := range samples {
			if s.Name == "platform_operator_child_writes_total" && s.Labels["owner_kind"] == "Tenant" {
				m[s.Labels["operation"]+" "+s.Labels["child_kind"]] += s.Value
			}
		}
		return m
	}
	before := count(op0)
	for k, v := range count(op1) {
		if d := v - before[k]; d > 0 {
			out[k] = benchkit.Round3(d / float64(n))
		}
	}
	out["status"] = benchkit.Round3(raw.Sum("example.com/tenants/status") / float64(n))
	if v := raw.Sum("example.com/tenants", "POST"); v > 0 {
		// Its finalizer, on the Tenant itself.
		out["update Tenant"] = benchkit.Round3(v / float64(n))
	}
	out["events"] = benchkit.Round3(float64(events) / float64(n))
	return out
}

type credentialSecret struct {
	version  string
	hasToken bool
}

// credentialSecrets are the Tenants' credentials Secrets, by Tenant.
func (p *phase) credentialSecrets(ctx context.Context) (map[string]credentialSecret, error) {
	out := map[string]credentialSecret{}
	list := &corev1.SecretList{}
	if err := p.cl.List(ctx, list, client.HasLabels{v1alpha1.TenantLabel}); err != nil {
		return nil, err
	}
	for _, s := range list.Items {
		if s.Name != tenant.DefaultCredentialsSecretName {
			continue
		}
		out[s.Labels[v1alpha1.TenantLabel]] = credentialSecret{version: s.ResourceVersion, hasToken: len(s.Data[v1alpha1.TenantTokenKey]) > 0}
	}
	return out, nil
}

// idleWindow counts the writes to the Tenants' kinds in a window with
// nothing to do.
func (p *phase) idleWindow(ctx context.Context) (*Window, error) {
	before, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return nil, err
	}
	events0, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	p.logf("tenants (operator): idle for %s", p.cfg.Idle)
	if err := sleepUntil(ctx, start.Add(p.cfg.Idle)); err != nil {
		return nil, err
	}
	after, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return nil, err
	}
	events1, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return nil, err
	}
	w := &Window{Seconds: benchkit.Round3(time.Since(start).Seconds()), Settled: true}
	all := after.WritesSince(before)
	w.Writes = pick(all, tenantResources)
	w.OperatorEvents = eventsOf(events1, events0, benchkit.OperatorName+"/Tenant")
	w.Total = sumResources(all, tenantResources) + float64(w.OperatorEvents)
	w.TokenRequests = all.Sum("serviceaccounts/token")
	return w, nil
}

// restartTenants restarts the operator and counts what the new process
// writes until it has been through every Tenant and its writes stopped.
func (p *phase) restartTenants(ctx context.Context, secrets map[string]credentialSecret, changed *int) (*Window, error) {
	before, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return nil, err
	}
	events0, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	p.op.Stop()
	if _, err := p.op.Start(ctx); err != nil {
		return nil, err
	}
	w := &Window{}
	reconciled := p.reconciledAll(ctx, start, map[string]int{"tenant": p.n})
	w.Reconciled = &reconciled
	after, settled, err := p.settle(ctx, before, tenantResources)
	if err != nil {
		return nil, err
	}
	w.Seconds, w.Settled = benchkit.Round3(time.Since(start).Seconds()), settled.Settled
	events1, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return nil, err
	}
	all := withoutOwnTokenRequest(after.WritesSince(before))
	w.Writes = pick(all, tenantResources)
	w.OperatorEvents = eventsOf(events1, events0, benchkit.OperatorName+"/Tenant")
	w.Total = sumResources(all, tenantResources) + float64(w.OperatorEvents)
	w.TokenRequests = all.Sum("serviceaccounts/token")
	if samples, err := p.op.Metrics.Scrape(ctx); err == nil {
		w.Requests = map[string]float64{}
		for _, s := range samples {
			if s.Name == "rest_client_requests_total" {
				w.Requests[s.Labels["method"]] += s.Value
			}
		}
	}
	now, err := p.credentialSecrets(ctx)
	if err != nil {
		return nil, err
	}
	for name, s := range secrets {
		if now[name].version != s.version {
			*changed++
		}
	}
	return w, nil
}
