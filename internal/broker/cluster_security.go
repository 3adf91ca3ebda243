package broker

import (
	"context"

	"github.com/sluice-broker/sluice/internal/controller"
)

// decide sends a change that answers with an offset (client quotas, ACLs)
// to the active controller and waits until this broker has applied it.
func decideOffset[Req any](c *clusterNode, method string, local func(context.Context, Req) (controller.OffsetResponse, error), req Req) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.OffsetResponse
	if err := callController(ctx, c, method, local, req, &resp); err != nil {
		return err
	}
	if _, err := c.store.WaitFor(ctx, resp.Offset); err != nil {
		return err
	}
	return nil
}

// registerSecurityHandlers serves the controller's quota and ACL methods
// on the peer listener.
func (c *clusterNode) registerSecurityHandlers() {
	handle(c.srv, "client-quotas", c.ctrl.AlterClientQuotas)
	handle(c.srv, "alter-acls", c.ctrl.AlterACLs)
}
