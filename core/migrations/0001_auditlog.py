"""AuditLog moves here from the workflow app: state only. The table (workflow_auditlog), its
rows and its append-only trigger stay exactly as they are; on a fresh database the table is
still created by workflow 0001 and guarded by workflow 0002."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('ops', '0001_initial'),
        ('workflow', '0003_chinese_labels'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
        migrations.CreateModel(
            name='AuditLog',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_username', models.CharField(max_length=150, verbose_name='操作人用户名')),
                ('action', models.CharField(choices=[('proposed', '提议'), ('confirmed', '确认'), ('rejected', '拒绝'), ('expired', '过期'), ('permission_denied', '越权被拒'), ('reindexed', '重建索引'), ('token_issued', '签发令牌'), ('token_revoked', '吊销令牌'), ('inventory_adjusted', '库存调整'), ('object_changed', '后台修改'), ('member_lookup', '查询会员余额'), ('unanswered_resolved', '未解答问题已处理'), ('alias_added', '添加别名')], db_index=True, max_length=32, verbose_name='动作')),
                ('target_id', models.PositiveBigIntegerField(blank=True, null=True, verbose_name='对象 ID')),
                ('target_repr', models.CharField(blank=True, max_length=200, verbose_name='对象')),
                ('before', models.JSONField(blank=True, null=True, verbose_name='变更前')),
                ('after', models.JSONField(blank=True, null=True, verbose_name='变更后')),
                ('request_id', models.CharField(blank=True, max_length=64, verbose_name='请求 ID')),
                ('remote_addr', models.GenericIPAddressField(blank=True, null=True, verbose_name='来源地址')),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True, verbose_name='时间')),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL, verbose_name='操作人')),
                ('store', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to='ops.store', verbose_name='门店')),
                ('target_type', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to='contenttypes.contenttype', verbose_name='对象类型')),
            ],
            options={
                'verbose_name': '审计日志',
                'verbose_name_plural': '审计日志',
                'ordering': ['-created_at', '-id'],
                'db_table': 'workflow_auditlog',
            },
        ),
            ],
            database_operations=[],
        ),
    ]
